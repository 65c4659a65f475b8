package engine

import (
	"runtime"
	"testing"
	"time"
)

// TestRequestReuseAfterComplete: an owner that reuses its request as soon
// as it sees it done (as a thread driving the port does, by its state)
// never finds the next use already signalled by the completion before:
// a receive from Done always means that use completed.
func TestRequestReuseAfterComplete(t *testing.T) {
	r := newRequest(nil, recvReq)
	r.state.Store(stateDone)
	start := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-start:
				r.complete(nil)
			case <-stop:
				return
			}
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 200000 && time.Now().Before(deadline); i++ {
		r.reset()
		if i%2 == 1 {
			// A late signal of the use before lands now, if at all.
			runtime.Gosched()
			select {
			case <-r.Done():
				t.Fatalf("use %d: signalled before it began", i)
			default:
			}
		}
		start <- struct{}{}
		if i%2 == 0 {
			// Seen done by its state, as a driving waiter sees it.
			for r.state.Load() != stateDone {
				runtime.Gosched()
			}
			continue
		}
		select {
		case <-r.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("use %d: no completion signalled", i)
		}
		if done, _ := r.Test(); !done {
			t.Fatalf("use %d: Done delivered a value before the request completed", i)
		}
	}
}
