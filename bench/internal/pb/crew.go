package pb

import (
	"context"
	"sync"
)

// crew is a set of goroutines kept from one round of a contention sample
// to the next, so that a sample times the messages of its threads and not
// the start of as many goroutines (and the growth of their fresh stacks),
// which at 1,000 threads of 20 messages each cost more than the messages.
// An application's threads live longer than one burst of messages.
type crew struct {
	starts []chan round
	errs   chan error
	wg     sync.WaitGroup
}

// round is what every member does once: k messages, within ctx. The
// first member that fails cancels the round for the others.
type round struct {
	ctx    context.Context
	cancel context.CancelFunc
	k      int
}

// newCrew starts n goroutines; member i runs work(ctx, k) for each round.
// work is made per member (mk(i)), so that it keeps its own state (its
// thread, its buffer) from round to round.
func newCrew(n int, mk func(i int) func(ctx context.Context, k int) error) *crew {
	c := &crew{starts: make([]chan round, n), errs: make(chan error, n)}
	for i := range n {
		c.starts[i] = make(chan round, 1)
		work := mk(i)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for r := range c.starts[i] {
				err := work(r.ctx, r.k)
				if err != nil {
					r.cancel()
				}
				c.errs <- err
			}
		}()
	}
	return c
}

// size is the number of members.
func (c *crew) size() int {
	if c == nil {
		return 0
	}
	return len(c.starts)
}

// start has every member begin a round of k within ctx (cancel ends
// ctx); wait collects it.
func (c *crew) start(ctx context.Context, cancel context.CancelFunc, k int) {
	for _, s := range c.starts {
		s <- round{ctx, cancel, k}
	}
}

// wait returns once every member has ended the round started last, with
// the first error among them.
func (c *crew) wait() error {
	var first error
	for range c.starts {
		if err := <-c.errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// close ends the members once they are done with their round.
func (c *crew) close() {
	if c == nil {
		return
	}
	for _, s := range c.starts {
		close(s)
	}
	c.wg.Wait()
}
