package pb

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A crew's members run every round with their own state kept and within
// one context (the engine watches a context a thread waits with twice in
// a row, where a new one each round costs every thread a select on a
// channel shared by all), the first error cancels the round for the
// others, a crew whose round was cancelled serves no more, and close ends
// every member.
func TestCrew(t *testing.T) {
	before := runtime.NumGoroutine()
	const n = 50
	var made atomic.Int32
	var done atomic.Int64
	var ctxs atomic.Int32 // rounds in a context other than the member's first
	boom := errors.New("boom")
	c := newCrew(n, func(i int) func(ctx context.Context, k int) error {
		made.Add(1)
		rounds := 0 // the member's own state
		var first <-chan struct{}
		return func(ctx context.Context, k int) error {
			rounds++
			if first == nil {
				first = ctx.Done()
			} else if ctx.Done() != first {
				ctxs.Add(1)
			}
			if k == -2 {
				return boom // every member fails at once
			}
			if k < 0 {
				if i == 0 {
					return boom
				}
				select { // the others wait until member 0 fails
				case <-ctx.Done():
					return nil
				case <-time.After(10 * time.Second):
					return errors.New("member 0's failure did not end the round")
				}
			}
			done.Add(int64(k * rounds))
			return nil
		}
	})
	ctx := context.Background()
	for r := 1; r <= 3; r++ {
		c2, cancel := context.WithCancel(ctx)
		c.start(c2, cancel, 10)
		if err := c.wait(); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	if got, want := done.Load(), int64(n*10*(1+2+3)); got != want {
		t.Errorf("work done %d, want %d (rounds counted per member)", got, want)
	}
	if made.Load() != n {
		t.Errorf("%d members made, want %d", made.Load(), n)
	}
	if k := ctxs.Load(); k != 0 {
		t.Errorf("%d member rounds ran in a context other than the member's first", k)
	}
	if !c.ok() {
		t.Errorf("crew not ok after rounds that ended well")
	}
	c2, cancel := context.WithTimeout(ctx, time.Minute)
	c.start(c2, cancel, -1)
	if err := c.wait(); !errors.Is(err, boom) {
		t.Errorf("round with a failing member: %v", err)
	}
	if c2.Err() != context.Canceled {
		t.Errorf("the failing member did not cancel the round: %v", c2.Err())
	}
	if c.ok() {
		t.Errorf("crew ok after a cancelled round")
	}
	cancel()
	// A crew whose round's context ended as the round ended serves no
	// more from the moment wait returns, not once the link gets to it.
	c.close()
	for range 20 {
		c = newCrew(n, func(i int) func(ctx context.Context, k int) error {
			return func(ctx context.Context, k int) error { return boom }
		})
		c2, cancel = context.WithCancel(ctx)
		c.start(c2, cancel, -2)
		if err := c.wait(); !errors.Is(err, boom) {
			t.Errorf("round of failing members: %v", err)
		}
		if c.ok() {
			t.Errorf("crew ok when wait returned after a cancelled round")
		}
		cancel()
		c.close()
	}
	var nilCrew *crew
	nilCrew.close()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after close, %d before", g, before)
	}
}

// wait returns only once every member has ended its round, however late
// the last ones end, and reports the round's first error: the members
// count down, and the one that ends the round signals it.
func TestCrewWaitsForAll(t *testing.T) {
	const n = 64
	var ended atomic.Int32
	boom := errors.New("boom")
	c := newCrew(n, func(i int) func(ctx context.Context, k int) error {
		return func(ctx context.Context, k int) error {
			defer ended.Add(1)
			if i%8 == 0 {
				// Some members end late: after the others have all
				// ended, or after a bound.
				deadline := time.Now().Add(10 * time.Second)
				for ended.Load() < n-n/8 && time.Now().Before(deadline) {
					runtime.Gosched()
				}
			}
			if k == 1 && i == n-1 {
				return boom
			}
			return nil
		}
	})
	defer c.close()
	for round := range 2 {
		ended.Store(0)
		ctx, cancel := context.WithCancel(context.Background())
		c.start(ctx, cancel, round)
		err := c.wait()
		if got := ended.Load(); got != n {
			t.Fatalf("round %d: wait returned with %d of %d members ended", round, got, n)
		}
		if round == 0 && err != nil || round == 1 && !errors.Is(err, boom) {
			t.Fatalf("round %d: error %v", round, err)
		}
		cancel()
	}
}
