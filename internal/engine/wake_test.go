package engine

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// A waiter woken by its request's signal returns the outcome without
// waiting for the completing thread's last store (the state done): at
// 1,000 threads it found that store still to come about once a message,
// and gave up its processor each time it looked. What needs the state
// done, Err here, waits it out.
func TestWokenWaiterReturnsAtOnce(t *testing.T) {
	e := &Engine{}
	r := newRequest(e, recvReq)
	want := errors.New("outcome")
	// The first half of complete: claimed, the outcome, the signal; the
	// state is not done yet.
	r.doneChan()
	r.parked.Store(true)
	if !r.state.CompareAndSwap(statePending, stateClaimed) {
		t.Fatal("not pending")
	}
	r.err = want
	*r.done.Load() <- struct{}{}

	got := make(chan error, 1)
	go func() {
		err, _ := r.block(context.Background(), 0)
		got <- err
	}()
	select {
	case err := <-got:
		if err != want {
			t.Errorf("woken waiter got %v, want %v", err, want)
		}
	case <-time.After(20 * time.Second):
		r.state.Store(stateDone) // let it go
		<-got
		t.Fatal("a woken waiter waited for the state done")
	}

	// Err waits out the completion under way.
	stored := finishLater(r)
	if err := r.Err(); err != want {
		t.Errorf("Err during the completion = %v, want %v", err, want)
	}
	<-stored
	if err := r.Err(); err != want {
		t.Errorf("Err = %v, want %v", err, want)
	}
}

// Recv does not wait for the last completion of its request to end: a
// thread receiving again at once takes the endpoint's other request.
func TestRecvWhileLastCompletes(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ep := e1.Endpoint(4)
	buf := make([]byte, 8)
	for i, m := range []string{"one", "two", "three"} {
		if err := e0.Post(3, 1, 4, 7, []byte(m)); err != nil {
			t.Fatal(err)
		}
		last := ep.recv
		if i == 1 {
			// A completion under way: signalled, not yet done. The
			// real one is waited out first, so that its late store of
			// the state cannot end the pretended one.
			last.completed()
			last.state.Store(stateClaimed)
		}
		got := make(chan string, 1)
		go func() {
			r, err := ep.Recv(ctx, 0, 3, 7, buf)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- string(r.Data())
		}()
		var s string
		select {
		case s = <-got:
		case <-time.After(20 * time.Second):
			last.state.Store(stateDone)
			<-got
			t.Fatal("Recv waited for the last completion of its request")
		}
		if i == 1 {
			last.state.Store(stateDone)
		}
		if s != m {
			t.Fatalf("message %d: %q, want %q", i, s, m)
		}
	}
}

// A request whose waiter was woken before its state was done is reused as
// one that completed: by IrecvReuse, and by Send for its own request.
func TestReuseWhileLastCompletes(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// underWay makes r's completion look under way again. The real one
	// may still be ending (a waiter returns on its signal, before its
	// state is stored done): it is waited out first, or its late store
	// could come after finishLater's and mark the next use done.
	underWay := func(r *Request) <-chan struct{} {
		r.completed()
		r.state.Store(stateClaimed)
		return finishLater(r)
	}

	ep := e1.Endpoint(4)
	r := ep.Irecv(0, 3, 7, nil)
	r.Cancel()
	if err := r.Wait(ctx); err != ErrCanceled {
		t.Fatalf("cancelled receive: %v", err)
	}
	stored := underWay(r)
	if got := ep.IrecvReuse(r, 0, 3, 7, nil); got != r {
		t.Error("IrecvReuse did not reuse a receive whose completion was under way")
	}
	<-stored
	if err := e0.Post(3, 1, 4, 7, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(ctx); err != nil || string(r.Data()) != "x" {
		t.Fatalf("reused receive: %v %q", err, r.Data())
	}

	src := e0.Endpoint(3)
	go func() {
		buf := make([]byte, 8)
		for range 2 {
			if _, err := ep.Recv(ctx, 0, 3, 8, buf); err != nil {
				return
			}
		}
	}()
	if err := src.Send(ctx, 1, 4, 8, []byte("a")); err != nil {
		t.Fatal(err)
	}
	s := src.send
	if s == nil {
		t.Fatal("Send kept no request")
	}
	for i := 0; s.refs.Load() != 0; i++ {
		if i == 1000 {
			t.Fatal("the send's request stayed referenced")
		}
		time.Sleep(time.Millisecond)
	}
	stored = underWay(s)
	if err := src.Send(ctx, 1, 4, 8, []byte("b")); err != nil {
		t.Fatal(err)
	}
	<-stored
	if src.send != s {
		t.Error("Send did not reuse its request whose completion was under way")
	}
}

// finishLater ends, a little later, the completion of r under way (its
// signal sent, its state claimed): it stores the state done, and closes
// the channel it returns once it has.
func finishLater(r *Request) <-chan struct{} {
	stored := make(chan struct{})
	go func() {
		for range 100 {
			runtime.Gosched()
		}
		r.state.Store(stateDone)
		close(stored)
	}()
	return stored
}
