package engine

import (
	"testing"
	"time"
)

// TestFlowSpin checks the decisions of a driving thread's spin over the
// batches of one wait (flow): the spin is extended past each batch while
// batches come at most half driveSpin apart; between two empty polls the
// thread waits as long as the batches have been coming apart (at most
// flowPace), unless its yield ran another thread; the first batch of a
// wait is polled for at once (a round trip's answer); the spin ends
// driveIdle after the start of the wait however busy the port; a trickle
// and a crowded process get the spin of driveSpin from the start of the
// wait alone.
func TestFlowSpin(t *testing.T) {
	us := func(n int64) int64 { return n * int64(time.Microsecond) }
	const t0 = int64(1e12)
	spin := int64(driveSpin)
	fast := us(1) // a yield that ran nothing else

	t.Run("stream", func(t *testing.T) {
		f := flow{end: t0 + int64(driveIdle)}
		until := t0 + spin // the spin from the start of the wait
		if got := f.next(t0+us(5), t0+us(5)+fast); got != 0 {
			t.Errorf("before any batch: next poll at +%v, want at once", time.Duration(got-t0-us(5)))
		}
		at := t0 + us(90)
		until = f.batch(at, until)
		if until != at+spin {
			t.Errorf("first batch at 90us: spin until +%v, want +%v", time.Duration(until-t0), time.Duration(at+spin-t0))
		}
		if got := f.next(at+us(2), at+us(2)+fast); got != 0 {
			t.Errorf("one batch, no interval known: next poll at +%v, want at once", time.Duration(got-at-us(2)))
		}
		for i := range 50 {
			at += us(20)
			until = f.batch(at, until)
			if until != at+spin {
				t.Fatalf("batch %d, 20us after the last: spin until %v after it, want %v", i, time.Duration(until-at), driveSpin)
			}
			now := at + us(3)
			if got, want := f.next(now, now+fast), now+us(20); got != want {
				t.Fatalf("batch %d: next poll %v after the empty one, want 20us", i, time.Duration(got-now))
			}
			if got := f.next(now, now+int64(yieldRan)+us(1)); got != 0 {
				t.Fatalf("batch %d: a yield that ran another thread: next poll %v later, want at once", i, time.Duration(got-now))
			}
		}
		if until <= t0+us(1000) {
			t.Errorf("a stream of 1 ms: spin ends at +%v, before its last batch", time.Duration(until-t0))
		}
		// Batches 40us apart: the wait between polls is flowPace.
		at += us(40)
		until = f.batch(at, until)
		if until != at+spin {
			t.Errorf("batch 40us after the last: spin until %v after it, want %v", time.Duration(until-at), driveSpin)
		}
		if got, want := f.next(at, at+fast), at+int64(flowPace); got != want {
			t.Errorf("batches 40us apart: next poll %v after the empty one, want %v", time.Duration(got-at), flowPace)
		}
	})

	t.Run("idle", func(t *testing.T) {
		// However busy the port, the spin ends driveIdle after the start
		// of the wait: the wait for a message long in coming then gives
		// the port back to the dispatcher.
		f := flow{end: t0 + int64(driveIdle)}
		until := t0 + spin
		for at := t0 + us(10); at < t0+2*int64(driveIdle); at += us(10) {
			until = f.batch(at, until)
			if until > f.end {
				t.Fatalf("batch at +%v: spin until +%v, past driveIdle", time.Duration(at-t0), time.Duration(until-t0))
			}
		}
		if until != f.end {
			t.Errorf("batches 10us apart for 2 x driveIdle: spin until +%v, want +%v", time.Duration(until-t0), driveIdle)
		}
	})

	t.Run("trickle", func(t *testing.T) {
		f := flow{end: t0 + int64(driveIdle)}
		until := f.batch(t0+us(10), t0+spin)
		for i := range 10 {
			at := t0 + us(10) + int64(i+1)*(spin/2+us(10))
			if got := f.batch(at, until); got != until {
				t.Fatalf("batch %d, %v after the last: spin until %v after it, want no longer (%v)", i,
					time.Duration(spin/2+us(10)), time.Duration(got-at), time.Duration(until-at))
			}
		}
	})

	t.Run("crowded", func(t *testing.T) {
		f := flow{off: true, end: t0 + int64(driveIdle)}
		until := t0 + spin
		for i := range 10 {
			at := t0 + int64(i)*us(10)
			if got := f.batch(at, until); got != until {
				t.Fatalf("crowded, batch %d: spin until +%v, want +%v", i, time.Duration(got-t0), time.Duration(until-t0))
			}
			if got := f.next(at+us(1), at+us(1)+fast); got != 0 {
				t.Fatalf("crowded, batch %d: next poll later, want at once", i)
			}
		}
	})
}
