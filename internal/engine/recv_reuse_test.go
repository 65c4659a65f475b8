package engine

import (
	"context"
	"encoding/binary"
	"testing"
	"time"
)

// TestRecvReuseSeesItsOwnMessage: a thread that receives in a loop on one
// endpoint (Recv reuses its request) gets each message once, in order,
// with its data. The receive is completed by the sending goroutine while
// the receiver waits on the request's signal; the receiver reuses the
// request as soon as it has the signal, so a completion still marking
// the request done after its signal would mark the next use done before
// any message matched it (that use then returned nothing, or a message
// it never received, and the request was left posted to be filled again).
func TestRecvReuseSeesItsOwnMessage(t *testing.T) {
	e, err := New(Config{Proc: 0, JobKey: 0xfeed})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const n = 20000
	rx := e.Endpoint(1)
	tx := e.Endpoint(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		var b [8]byte
		for i := uint64(0); i < n && ctx.Err() == nil; i++ {
			binary.LittleEndian.PutUint64(b[:], i)
			if err := tx.Send(ctx, 0, 1, 7, b[:]); err != nil {
				return
			}
		}
	}()
	for i := uint64(0); i < n; i++ {
		r, err := rx.Recv(ctx, AnyProc, AnyThread, AnyTag, nil)
		if err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		d := r.Data()
		if src, th := r.Source(); len(d) != 8 || src != 0 || th != 2 || r.Tag() != 7 {
			t.Fatalf("receive %d: %d bytes from <%d,%d> tag %d, want 8 from <0,2> tag 7", i, len(d), src, th, r.Tag())
		}
		if got := binary.LittleEndian.Uint64(d); got != i {
			t.Fatalf("receive %d got message %d", i, got)
		}
	}
}

// TestArrivedMessageMakesNoChannel: a receive posted for a message that
// has arrived completes at once, and neither it nor a wait on it makes
// the channel a blocked waiter needs; a receive that does block gets one
// and is woken through it.
func TestArrivedMessageMakesNoChannel(t *testing.T) {
	e, err := New(Config{Proc: 0, JobKey: 0xfeed})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rx, tx := e.Endpoint(1), e.Endpoint(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tx.Send(ctx, 0, 1, 7, []byte("x")); err != nil {
		t.Fatal(err)
	}
	r := rx.Irecv(0, 2, 7, nil)
	if err := r.Wait(ctx); err != nil || string(r.Data()) != "x" {
		t.Fatalf("receive: %q, %v", r.Data(), err)
	}
	if r.done.Load() != nil {
		t.Fatal("a receive of a message that had arrived made a channel")
	}
	r = rx.Irecv(0, 2, 8, nil)
	c := r.Done()
	if r.done.Load() == nil {
		t.Fatal("Done made no channel")
	}
	go tx.Send(ctx, 0, 1, 8, []byte("y"))
	select {
	case <-c:
	case <-ctx.Done():
		t.Fatal("the receive's channel was never signalled")
	}
	if err := r.Wait(ctx); err != nil || string(r.Data()) != "y" {
		t.Fatalf("receive: %q, %v", r.Data(), err)
	}
}
