package directory

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// stallAfterDeadline is a connection whose process stalls once, for stall,
// right after setting a write deadline: the deadline runs out before the
// write is tried.
type stallAfterDeadline struct {
	net.Conn
	stall   time.Duration
	stalled bool
}

func (c *stallAfterDeadline) SetWriteDeadline(t time.Time) error {
	err := c.Conn.SetWriteDeadline(t)
	if !c.stalled {
		c.stalled = true
		time.Sleep(c.stall)
	}
	return err
}

// tcpPair is a connected pair of loopback TCP connections.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// A stall of the writing process between setting the deadline and writing
// is no fault of the reader: the frame still goes, and the reader gets it.
func TestWriteOwnStallIsNotSlowReader(t *testing.T) {
	const timeout = 200 * time.Millisecond
	a, b := tcpPair(t)
	// A stall just past the timeout: the deadline fires on time for a
	// write tried after it, so only the write's own start tells the stall.
	w := timedWriter{&stallAfterDeadline{Conn: a, stall: timeout + timeout/5}, timeout}
	if err := writeFrame(w, []byte("ping")); err != nil {
		t.Fatalf("write after a stall of this process: %v", err)
	}
	b.SetReadDeadline(time.Now().Add(time.Minute))
	got, err := readFrame(b, 64)
	if err != nil || string(got) != "ping" {
		t.Fatalf("read %q, %v", got, err)
	}
}

// A reader that takes nothing still fails the write, once its socket is
// full and nothing more goes for the timeout.
func TestWriteToNonReaderFails(t *testing.T) {
	const timeout = 200 * time.Millisecond
	a, _ := tcpPair(t)
	done := make(chan error, 1)
	go func() {
		_, err := timedWriter{a, timeout}.Write(make([]byte, 256<<20))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write to a reader that takes nothing: %v", err)
		}
	case <-time.After(2 * time.Minute):
		a.Close()
		t.Fatal("write to a reader that takes nothing did not fail in 2 minutes")
	}
}
