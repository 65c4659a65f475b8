package rdma

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// TestWaitInterrupt: Wait and Park end with a datagram, with Interrupt
// (called during the wait or before it) or, for Wait, at the deadline; an
// interrupt is used up by the wait it ends.
func TestWaitInterrupt(t *testing.T) {
	a := listenOrSkip(t, Config{})
	b := listenOrSkip(t, Config{})
	msgs := make([][]byte, a.BatchSize())

	start := time.Now()
	n, err := a.Wait(msgs, time.Now().Add(30*time.Millisecond))
	if n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Wait on an idle port: %d, %v; want the deadline", n, err)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Fatalf("Wait returned after %v, before its deadline", el)
	}

	// Interrupt before the wait: the next Wait returns at once, the one
	// after it waits again.
	if err := a.Interrupt(); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Wait(msgs, time.Now().Add(10*time.Second)); n != 0 || err != nil {
		t.Fatalf("Wait after Interrupt: %d, %v; want 0, nil", n, err)
	}
	if n, err := a.Wait(msgs, time.Now().Add(20*time.Millisecond)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("second Wait after one Interrupt: %d, %v; want the deadline", n, err)
	}

	// Interrupt during a Park (no deadline).
	for i := 0; i < 20; i++ {
		type res struct {
			n   int
			err error
		}
		done := make(chan res, 1)
		go func() {
			n, err := a.Park(msgs)
			done <- res{n, err}
		}()
		time.Sleep(time.Duration(i%4) * time.Millisecond)
		if err := a.Interrupt(); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if r.n != 0 || r.err != nil {
				t.Fatalf("Park interrupted: %d, %v; want 0, nil", r.n, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Park %d not interrupted in 10 s", i)
		}
	}

	// A datagram ends a Park.
	done := make(chan string, 1)
	go func() {
		for {
			n, err := a.Park(msgs)
			if err != nil {
				done <- "error: " + err.Error()
				return
			}
			if n > 0 {
				done <- string(msgs[0])
				return
			}
		}
	}()
	time.Sleep(5 * time.Millisecond)
	if _, err := b.Send([]fabric.Datagram{{Body: []byte("wake"), To: a.LocalEndpoint()}}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got != "wake" {
			t.Fatalf("Park returned %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("datagram did not end the Park in 10 s")
	}

	// Close ends a Park with ErrClosed.
	go func() {
		_, err := a.Park(msgs)
		done <- "closed: " + errString(err)
	}()
	time.Sleep(5 * time.Millisecond)
	a.Close()
	select {
	case got := <-done:
		if got != "closed: "+fabric.ErrClosed.Error() {
			t.Fatalf("Park across Close: %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the Park in 10 s")
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestWaitSpinsBrieflyAfterLongWait: a Wait that lasted longer than
// waitSpin (here, to its deadline) makes the next one spin only
// blockSpin, which ends before the spin would give the CPU up: idle Waits
// after a long one yield no more. A Wait that found its datagram at once
// makes the next one spin waitSpin again, yielding.
func TestWaitSpinsBrieflyAfterLongWait(t *testing.T) {
	a := listenOrSkip(t, Config{})
	b := listenOrSkip(t, Config{})
	msgs := make([][]byte, a.BatchSize())
	idle := func() {
		t.Helper()
		if n, err := a.Wait(msgs, time.Now().Add(5*time.Millisecond)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Wait on an idle port: %d, %v; want the deadline", n, err)
		}
	}
	idle() // 5 ms: longer than its spin
	y0 := a.Stats().Yields
	for range 5 {
		idle()
	}
	if y := a.Stats().Yields - y0; y != 0 {
		t.Fatalf("5 idle Waits after a long one gave the CPU up %d times; want a brief spin, with none", y)
	}

	// A quick Wait (by this test's clock, which spans the port's), then
	// an idle one, until the idle one spins long enough to yield: on a
	// loaded host one pass of the spin may outlast it.
	for try := 0; ; try++ {
		if try == 50 {
			t.Fatal("no idle Wait after a quick one spun long enough to yield, in 50 tries")
		}
		if _, err := b.Send([]fabric.Datagram{{Body: []byte("x"), To: a.LocalEndpoint()}}); err != nil {
			t.Fatal(err)
		}
		// Most often in the receive queue before the Wait begins (the
		// sender's doorbell carries it there); a Wait that is not quick
		// is tried again.
		time.Sleep(2 * time.Millisecond)
		start := time.Now()
		n, err := a.Wait(msgs, time.Now().Add(10*time.Second))
		quick := time.Since(start) <= waitSpin
		if err != nil || n != 1 || string(msgs[0]) != "x" {
			t.Fatalf("Wait for a datagram: %d, %v", n, err)
		}
		if !quick {
			continue
		}
		y0 := a.Stats().Yields
		idle()
		if a.Stats().Yields > y0 {
			return
		}
	}
}
