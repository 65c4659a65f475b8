package main

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/routing"
)

// routeSettle is how long the membership must stay unchanged before the
// tables are printed, so that a burst of joins prints once.
const routeSettle = 150 * time.Millisecond

// routeWatch prints the routing table of every member of the application
// (--routes): as soon as the membership has min members (every process
// started), again routeSettle after each later change settled, and whenever
// pcorrun gets SIGUSR1. The tables are computed from
// the directory's membership with the same model the processes use, so
// they are what each process applies.
type routeWatch struct {
	out *lockedWriter
	min int

	mu      sync.Mutex
	srv     *directory.Server
	timer   *time.Timer
	stopped bool
	sigs    chan os.Signal
	done    chan struct{}
	// members follows the membership from the directory's events; full is
	// the membership when it first had min members, until printed (at
	// once, not after routeSettle: a short job's processes may all have
	// left by then, and stop prints it if it is still pending).
	members map[uint32]directory.Member
	reached bool
	full    []directory.Member
}

func newRouteWatch(out *lockedWriter, min int) *routeWatch {
	return &routeWatch{out: out, min: min, members: make(map[uint32]directory.Member)}
}

// start begins watching srv and listening for SIGUSR1.
func (w *routeWatch) start(srv *directory.Server) {
	w.mu.Lock()
	w.srv = srv
	w.sigs = make(chan os.Signal, 1)
	w.done = make(chan struct{})
	w.mu.Unlock()
	signal.Notify(w.sigs, syscall.SIGUSR1)
	go func() {
		for {
			select {
			case <-w.sigs:
				w.print(true)
			case <-w.done:
				return
			}
		}
	}()
}

// changed is called with every membership change (from the directory's
// event callback, with the directory's lock held: it only records the
// change and arms a timer).
func (w *routeWatch) changed(ev directory.Event) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch ev.Kind {
	case directory.Joined:
		w.members[ev.Member.Proc] = ev.Member
	case directory.Left:
		delete(w.members, ev.Member.Proc)
	}
	if w.stopped || w.srv == nil {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	if !w.reached && len(w.members) >= w.min {
		// Every process started has joined: the burst of joins is over.
		w.reached = true
		w.full = make([]directory.Member, 0, len(w.members))
		for _, m := range w.members {
			w.full = append(w.full, m)
		}
		sort.Slice(w.full, func(i, j int) bool { return w.full[i].Proc < w.full[j].Proc })
		w.timer = time.AfterFunc(0, w.printFull)
		return
	}
	if w.reached {
		w.timer = time.AfterFunc(routeSettle, func() { w.print(false) })
	}
}

// printFull prints the membership recorded when it was first complete, if
// not printed yet. Called with w.mu not held.
func (w *routeWatch) printFull() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.printFullLocked()
}

func (w *routeWatch) printFullLocked() {
	if w.full != nil {
		w.out.writeLine(formatRoutes(w.full))
		w.full = nil
	}
}

// stop ends the watch; no table is printed afterwards.
func (w *routeWatch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.printFullLocked()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.sigs != nil {
		signal.Stop(w.sigs)
		close(w.done)
	}
}

func (w *routeWatch) print(force bool) {
	w.mu.Lock()
	srv, stopped := w.srv, w.stopped
	w.mu.Unlock()
	if stopped || srv == nil {
		return
	}
	// Not under w.mu: the directory calls changed with its own lock held,
	// and Members takes that lock.
	ms := srv.Members()
	if !force && len(ms) < w.min {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.printFullLocked() // first, should its timer not have run yet
	if !w.stopped {
		w.out.writeLine(formatRoutes(ms))
	}
}

// formatRoutes renders the routing table of every member, each under a
// header line naming the process.
func formatRoutes(ms []directory.Member) []byte {
	var b bytes.Buffer
	if len(ms) == 0 {
		b.WriteString("pcorrun: routes: no process has joined\n")
	}
	for _, m := range ms {
		host := ""
		if m.Host != "" {
			host = " on " + m.Host
		}
		fmt.Fprintf(&b, "pcorrun: routes of process %d%s:\n", m.Proc, host)
		routing.Build(m.Proc, ms).Format(&b)
	}
	return b.Bytes()
}
