package pb

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A crew's members run every round with their own state kept, the first
// error cancels the round for the others, and close ends every member.
func TestCrew(t *testing.T) {
	before := runtime.NumGoroutine()
	const n = 50
	var made atomic.Int32
	var done atomic.Int64
	boom := errors.New("boom")
	c := newCrew(n, func(i int) func(ctx context.Context, k int) error {
		made.Add(1)
		rounds := 0 // the member's own state
		return func(ctx context.Context, k int) error {
			rounds++
			if k < 0 {
				if i == 0 {
					return boom
				}
				<-ctx.Done() // the others wait until member 0 fails
				return nil
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
	c2, cancel := context.WithTimeout(ctx, time.Minute)
	c.start(c2, cancel, -1)
	if err := c.wait(); !errors.Is(err, boom) {
		t.Errorf("round with a failing member: %v", err)
	}
	if c2.Err() != context.Canceled {
		t.Errorf("the failing member did not cancel the round: %v", c2.Err())
	}
	cancel()
	c.close()
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
