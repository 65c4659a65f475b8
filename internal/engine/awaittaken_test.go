package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/shm"
)

// answeredFirst is a shared-memory port that reports what it sent as taken
// only once its engine has received the answer to it as well (or after a
// bound): the order in which a blocking Send to a quick peer often sees
// its message taken.
type answeredFirst struct {
	*shm.Port
	e    atomic.Pointer[Engine]
	want atomic.Uint64 // messages received at which Taken may say taken
}

func (a *answeredFirst) Taken(to fabric.Endpoint) (bool, error) {
	ok, err := a.Port.Taken(to)
	if err != nil || !ok {
		return ok, err
	}
	e := a.e.Load()
	return e == nil || e.Stats()[0].MessagesRecv >= a.want.Load(), nil
}

// TestAwaitTakenDrivesPort checks that a thread in a blocking Send,
// waiting for its destination to take the message, drives the port and so
// receives the answer itself when the answer comes first, rather than
// leaving it to the dispatcher asleep in the fabric: then the receive
// that follows would find its message there, never wait, and never take
// the port back from the dispatcher, and every answer would cost the
// dispatcher's wake-up.
func TestAwaitTakenDrivesPort(t *testing.T) {
	pa, pb := shmPorts(t)
	a := &answeredFirst{Port: pa}
	e0, e1 := pair(t, a, pb, Config{})
	a.e.Store(e0)

	const rounds = 40
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	echoed := make(chan error, 1)
	go func() {
		ep := e1.Endpoint(4)
		buf := make([]byte, 8)
		for i := 0; i <= rounds; i++ {
			r, err := ep.Recv(ctx, 0, 3, 9, buf)
			if err == nil {
				err = ep.Send(ctx, 0, 3, 9, r.Data())
			}
			if err != nil {
				echoed <- err
				return
			}
		}
		echoed <- nil
	}()
	ep := e0.Endpoint(3)
	buf := make([]byte, 8)
	var before PortStats
	for i := 0; i <= rounds; i++ {
		if i == 1 {
			before = e0.Stats()[0] // after one round: the peers know each other
		}
		a.want.Store(e0.Stats()[0].MessagesRecv + 1)
		if err := ep.Send(ctx, 1, 4, 9, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := ep.Recv(ctx, 1, 4, 9, buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-echoed; err != nil {
		t.Fatal(err)
	}
	after := e0.Stats()[0]
	byThread := after.ThreadBatches - before.ThreadBatches
	byDispatcher := after.DispatcherBatches - before.DispatcherBatches
	// A dispatcher woken at the moment the thread takes the port may
	// still receive an answer now and then.
	if byDispatcher > rounds/2 {
		t.Errorf("of %d answers, the dispatcher received %d batches, the sending thread %d", rounds, byDispatcher, byThread)
	}
}
