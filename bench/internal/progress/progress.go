// Package progress draws a one-line live status on a terminal: nothing for
// runs shorter than a delay (2 s by default) or when the output is not a
// terminal, then the current step and elapsed time, redrawn in place.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Line is a live status line. The zero value is not usable; make one with
// Start. A nil *Line ignores every call, so callers need no checks.
type Line struct {
	w      io.Writer
	delay  time.Duration
	start  time.Time
	mu     sync.Mutex
	status string
	drawn  int // width of the line last drawn
	stop   chan struct{}
	done   chan struct{}
}

// Start begins a status line on f if f is a terminal, else returns nil.
func Start(f *os.File) *Line {
	if !IsTerminal(f) {
		return nil
	}
	return StartOn(f, 2*time.Second, 250*time.Millisecond)
}

// StartOn begins a status line on w that appears after delay and is redrawn
// every tick.
func StartOn(w io.Writer, delay, tick time.Duration) *Line {
	l := &Line{w: w, delay: delay, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run(tick)
	return l
}

// Set changes the status text.
func (l *Line) Set(format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.status = fmt.Sprintf(format, args...)
	l.mu.Unlock()
}

// Stop erases the line and ends its goroutine. It is idempotent.
func (l *Line) Stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.mu.Unlock()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn > 0 {
		fmt.Fprintf(l.w, "\r%s\r", strings.Repeat(" ", l.drawn))
		l.drawn = 0
	}
}

func (l *Line) run(tick time.Duration) {
	defer close(l.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			el := now.Sub(l.start)
			if el < l.delay {
				continue
			}
			l.mu.Lock()
			s := fmt.Sprintf("[%5.1fs] %s", el.Seconds(), l.status)
			pad := ""
			if l.drawn > len(s) {
				pad = strings.Repeat(" ", l.drawn-len(s))
			}
			fmt.Fprintf(l.w, "\r%s%s", s, pad)
			l.drawn = len(s)
			l.mu.Unlock()
		}
	}
}
