package engine

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A Recv blocked with the context its endpoint's last waits used (watched,
// no select) ends when the context does.
func TestPlainWaitEndsWithContext(t *testing.T) {
	e, err := New(Config{Proc: 0, JobKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.spinMax = 0 // every wait blocks
	b := e.Endpoint(2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf := make([]byte, 1)
	watched := func() bool {
		return b.recv.w.done == ctx.Done() || (b.recvAlt != nil && b.recvAlt.w.done == ctx.Done())
	}
	// A Recv whose message came first (the sending goroutine may run
	// before it) does not wait: receive until one of the endpoint's
	// requests has waited with ctx twice, within a bound.
	for i := 0; !watched(); i++ {
		if i == 100 {
			t.Fatal("the endpoint's receive does not watch the context it received with 100 times")
		}
		go e.Endpoint(1).Send(ctx, 0, 2, 7, []byte{byte(i)})
		if _, err := b.Recv(ctx, 0, 1, 7, buf); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan error, 1)
	go func() {
		_, err := b.Recv(ctx, 0, 1, 7, buf)
		got <- err
	}()
	time.Sleep(5 * time.Millisecond)
	cancel()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Recv after the context ended: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a watched wait did not end with its context")
	}
}

// Contexts that end while messages complete the waits on them, some
// watched, some not: every Recv returns its own message or the context's
// error, never a receive still pending (a signal of the watch left over
// for a later wait), and nothing blocks for good.
func TestPlainWaitNoStraySignal(t *testing.T) {
	e, err := New(Config{Proc: 0, JobKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	b := e.Endpoint(2)
	outer, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	buf := make([]byte, 2)
	deadline := time.Now().Add(5 * time.Second)
	sent := byte(0)
	for round := 0; round < 50000 && time.Now().Before(deadline); round++ {
		e.spinMax = int32(round % 2)
		ctx, cancel := context.WithCancel(outer)
		for i := range 4 {
			sent++
			msg := []byte{sent, byte(round)}
			if i == 3 {
				// The context ends about when the message comes.
				go cancel()
			}
			go e.Endpoint(1).Send(outer, 0, 2, 7, msg)
			r, err := b.Recv(ctx, 0, 1, 7, buf)
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("round %d: %v", round, err)
				}
				// Withdrawn: the message is taken with the next context.
				r, err = b.Recv(outer, 0, 1, 7, buf)
				if err != nil {
					t.Fatal(err)
				}
			}
			if r.state.Load() == statePending || len(r.Data()) != 2 || r.Data()[0] != sent {
				t.Fatalf("round %d message %d: Recv returned %v (pending %v), want %d", round, i, r.Data(), r.state.Load() == statePending, sent)
			}
		}
		cancel()
	}
}

// countingCtx is a context that never ends and counts the functions
// registered with context.AfterFunc and not yet stopped, which it keeps
// (as a context of the standard library does).
type countingCtx struct {
	done       chan struct{}
	made, live atomic.Int32
	mu         sync.Mutex
	fs         map[*func()]bool
}

func (c *countingCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *countingCtx) Done() <-chan struct{}       { return c.done }
func (c *countingCtx) Err() error                  { return nil }
func (c *countingCtx) Value(any) any               { return nil }

func (c *countingCtx) AfterFunc(f func()) func() bool {
	c.made.Add(1)
	c.live.Add(1)
	c.mu.Lock()
	if c.fs == nil {
		c.fs = make(map[*func()]bool)
	}
	c.fs[&f] = true
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.fs[&f] {
			return false
		}
		delete(c.fs, &f)
		c.live.Add(-1)
		return true
	}
}

// The watch an endpoint's request keeps on a context that lives on ends
// once the endpoint is dropped: the context does not keep the request,
// and the watch, for as long as it lives.
func TestWatchEndsWithDroppedEndpoint(t *testing.T) {
	e, err := New(Config{Proc: 0, JobKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.spinMax = 0 // every wait blocks
	ctx := &countingCtx{done: make(chan struct{})}
	func() {
		b := e.Endpoint(2)
		buf := make([]byte, 1)
		for i := 0; ctx.made.Load() == 0; i++ {
			if i == 100 {
				t.Fatal("the endpoint's receive does not watch the context it received with 100 times")
			}
			go e.Endpoint(1).Send(ctx, 0, 2, 7, []byte{byte(i)})
			if _, err := b.Recv(ctx, 0, 1, 7, buf); err != nil {
				t.Fatal(err)
			}
		}
	}()
	for i := 0; ctx.live.Load() != 0; i++ {
		if i == 200 {
			t.Fatalf("%d watches of a dropped endpoint still live", ctx.live.Load())
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}
