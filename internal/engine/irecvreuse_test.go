package engine

import (
	"context"
	"encoding/binary"
	"testing"
	"time"
)

// TestIrecvReuse: a thread that keeps a ring of receives posted and posts
// each again with IrecvReuse once it completed gets every message once, in
// order, with its data and sender, through the same requests; a request
// not yet completed is left alone (a new one is posted, and the pending
// one still gets its own message).
func TestIrecvReuse(t *testing.T) {
	e, err := New(Config{Proc: 0, JobKey: 0xfeed})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const n, depth = 5000, 8
	rx := e.Endpoint(1)
	tx := e.Endpoint(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ring := make([]*Request, depth)
	for i := range ring {
		ring[i] = rx.Irecv(0, 2, 7, make([]byte, 8))
	}
	first := append([]*Request(nil), ring...)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		var b [8]byte
		for i := uint64(0); i < n && ctx.Err() == nil; i++ {
			binary.LittleEndian.PutUint64(b[:], i)
			if err := tx.Send(ctx, 0, 1, 7, b[:]); err != nil {
				return
			}
		}
	}()
	for i := uint64(0); i < n; i++ {
		k := i % depth
		r := ring[k]
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		d := r.Data()
		if src, th := r.Source(); len(d) != 8 || src != 0 || th != 2 || r.Tag() != 7 {
			t.Fatalf("receive %d: %d bytes from <%d,%d> tag %d, want 8 from <0,2> tag 7", i, len(d), src, th, r.Tag())
		}
		if got := binary.LittleEndian.Uint64(d); got != i {
			t.Fatalf("receive %d got message %d", i, got)
		}
		if i+depth < n {
			ring[k] = rx.IrecvReuse(r, 0, 2, 7, d[:cap(d)])
			if ring[k] != first[k] {
				t.Fatalf("receive %d: IrecvReuse of a completed receive posted a new request", i)
			}
		}
	}

	<-sent // tx is used by one goroutine at a time

	// A receive still pending is not reused: IrecvReuse posts another,
	// and each gets its own message.
	pending := rx.Irecv(0, 2, 9, nil)
	other := rx.IrecvReuse(pending, 0, 2, 9, nil)
	if other == pending {
		t.Fatal("IrecvReuse reposted a receive still pending")
	}
	for _, v := range []byte{1, 2} {
		if err := tx.Send(ctx, 0, 1, 9, []byte{v}); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range []*Request{pending, other} {
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if d := r.Data(); len(d) != 1 || d[0] != byte(i+1) {
			t.Fatalf("receive %d of the pending pair got %v, want [%d]", i, d, i+1)
		}
	}
}

// A receive whose completion was signalled on its Done channel and never
// taken from it, posted again with IrecvReuse, starts with no signal: its
// next Done does not fire before its next message. One that completed
// before anyone waited has no signal to take.
func TestIrecvReuseDrainsSignal(t *testing.T) {
	e, err := New(Config{Proc: 0, JobKey: 0xfeed})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rx, tx := e.Endpoint(1), e.Endpoint(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := rx.Irecv(0, 2, 7, make([]byte, 8))
	for i := range 4 {
		parked := i%2 == 0
		if parked {
			_ = r.Done() // signalled on completion; nobody takes it
		}
		// (A receive not parked completes without a signal.)
		if err := tx.Send(ctx, 0, 1, 7, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if done, err := r.Test(); !done || err != nil || len(r.Data()) != 1 || r.Data()[0] != byte(i) {
			t.Fatalf("message %d: done %v, %v, data %v", i, done, err, r.Data())
		}
		if r2 := rx.IrecvReuse(r, 0, 2, 7, make([]byte, 8)); r2 != r {
			t.Fatalf("message %d: IrecvReuse posted a new request", i)
		}
		if done, _ := r.Test(); done {
			t.Fatalf("message %d: the reposted receive is done with no message", i)
		}
		if !parked {
			continue // Done would park r
		}
		select {
		case <-r.Done():
			t.Fatalf("message %d: the reposted receive signals done with no message", i)
		default:
		}
		// Its next message is signalled.
		if err := tx.Send(ctx, 0, 1, 7, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-r.Done():
		case <-ctx.Done():
			t.Fatalf("message %d: no signal for the reposted receive's message", i)
		}
		r = rx.IrecvReuse(r, 0, 2, 7, make([]byte, 8))
	}
}
