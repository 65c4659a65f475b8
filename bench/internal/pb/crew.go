package pb

import (
	"context"
	"sync"
	"sync/atomic"
)

// crew is a set of goroutines kept from one round of a contention sample
// to the next, so that a sample times the messages of its threads and not
// the start of as many goroutines (and the growth of their fresh stacks),
// which at 1,000 threads of 20 messages each cost more than the messages.
// An application's threads live longer than one burst of messages.
//
// The members wait within one context for as long as the crew lives, as an
// application's threads do, and not within a new one every round: a wait
// that may have to end with its context parks in a select on the
// context's Done channel, one channel for all the members, until the
// engine has seen the same context twice in a row on the thread and
// watches it instead (a context.AfterFunc per thread); with a context a
// round, each of 1,000 receivers paid the select at the first wait of
// every round of 20 messages, where a single receiver paid it once per
// 20,000. A round's context ends the crew's (and so the round) when it
// ends before the round is done; such a crew serves no further round.
type crew struct {
	starts []chan round
	// A round's members count down left; the last to end signals done,
	// so that collecting a round wakes the collector once, not once per
	// member (at 1,000 threads of 20 messages, a wake of the collecting
	// goroutine for every member was one more park and wake a thread and
	// round than the single thread paid). first is the round's first
	// error.
	left   atomic.Int32
	done   chan struct{}
	errMu  sync.Mutex
	first  error
	wg     sync.WaitGroup
	ctx    context.Context // the members' context in every round
	end    context.CancelFunc
	unlink func() bool // ends the current round's link to ctx
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
	c := &crew{starts: make([]chan round, n), done: make(chan struct{}, 1)}
	c.ctx, c.end = context.WithCancel(context.Background())
	for i := range n {
		c.starts[i] = make(chan round, 1)
		work := mk(i)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for r := range c.starts[i] {
				if err := work(r.ctx, r.k); err != nil {
					r.cancel()
					c.errMu.Lock()
					if c.first == nil {
						c.first = err
					}
					c.errMu.Unlock()
				}
				if c.left.Add(-1) == 0 {
					c.done <- struct{}{}
				}
			}
		}()
	}
	return c
}

// ok reports whether c can serve another round: no round's context has
// ended its own.
func (c *crew) ok() bool { return c != nil && c.ctx.Err() == nil }

// start has every member begin a round of k within ctx (cancel ends
// ctx); wait collects it. The members run within the crew's context,
// which ctx ends if it ends before wait has returned.
func (c *crew) start(ctx context.Context, cancel context.CancelFunc, k int) {
	c.unlink = context.AfterFunc(ctx, c.end)
	c.first = nil
	c.left.Store(int32(len(c.starts)))
	if len(c.starts) == 0 {
		c.done <- struct{}{}
	}
	for _, s := range c.starts {
		s <- round{c.ctx, cancel, k}
	}
}

// wait returns once every member has ended the round started last, with
// the first error among them.
func (c *crew) wait() error {
	<-c.done
	c.errMu.Lock()
	first := c.first
	c.errMu.Unlock()
	if c.unlink != nil {
		if !c.unlink() {
			// The round's context ended: the crew's ends now, not
			// when the link's goroutine gets to it.
			c.end()
		}
		c.unlink = nil
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
	c.end()
}
