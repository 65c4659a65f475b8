package pcor_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// Probe waits for a matching message to arrive from another node, reports
// its source, tag and length, and leaves it to be received.
func TestProbe(t *testing.T) {
	a, c := udpPair(t, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := tc.Probe(short, pcor.Any, 7); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("probe with nothing sent: %v", err)
	}
	type result struct {
		st  pcor.Status
		err error
	}
	probed := make(chan result, 1)
	go func() {
		st, err := tc.Probe(ctx, pcor.Any, 7)
		probed <- result{st, err}
	}()
	select {
	case r := <-probed:
		t.Fatalf("probe returned before anything was sent: %+v %v", r.st, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	// A message with another tag does not satisfy it.
	if err := ta.Send(ctx, tc.Addr(), 8, []byte("other")); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(200000, 3)
	if err := ta.Send(ctx, tc.Addr(), 7, data); err != nil {
		t.Fatal(err)
	}
	r := <-probed
	if r.err != nil || r.st.Src != ta.Addr() || r.st.Tag != 7 || r.st.Len != len(data) {
		t.Fatalf("probe: %+v %v", r.st, r.err)
	}
	// Probing does not take the message.
	if st, ok := tc.Iprobe(ta.Addr(), 7); !ok || st.Len != len(data) {
		t.Fatalf("iprobe after probe: %+v %v", st, ok)
	}
	m, err := tc.Recv(ctx, r.st.Src, r.st.Tag)
	if err != nil || !bytes.Equal(m.Data, data) {
		t.Fatalf("recv after probe: %v", err)
	}
	if _, ok := tc.Iprobe(ta.Addr(), 7); ok {
		t.Fatal("the message is still there after it was received")
	}
	if m, err := tc.Recv(ctx, ta.Addr(), 8); err != nil || string(m.Data) != "other" {
		t.Fatalf("the other message: %q %v", m.Data, err)
	}
}

// Request.Test reports false while a receive is pending and true, with no
// error and the message, once it has completed; an Isend's Test turns true
// once the destination has the message.
func TestRequestTest(t *testing.T) {
	a, c := udpPair(t, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	r := tc.Irecv(ta.Addr(), 1, nil)
	time.Sleep(20 * time.Millisecond)
	if done, err := r.Test(); done || err != nil {
		t.Fatalf("Test before any send: %v %v", done, err)
	}
	data := randomBytes(300000, 4)
	s := ta.Isend(tc.Addr(), 1, data)
	var sDone, rDone bool
	for deadline := time.Now().Add(20 * time.Second); !(sDone && rDone); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Test still false after 20 s: send %v, receive %v", sDone, rDone)
		}
		var err error
		if !sDone {
			if sDone, err = s.Test(); err != nil {
				t.Fatal(err)
			}
		}
		if !rDone {
			if rDone, err = r.Test(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m := r.Message(); !bytes.Equal(m.Data, data) || m.Src != ta.Addr() || m.Tag != 1 {
		t.Fatalf("message %v from %v", m.Tag, m.Src)
	}
	// Test stays true.
	if done, err := r.Test(); !done || err != nil {
		t.Fatalf("Test after completion: %v %v", done, err)
	}
}

// Wait returns the context's error when it ends first and leaves the
// request pending: it still completes when its message comes, and it can
// be cancelled instead.
func TestWaitExpiry(t *testing.T) {
	a, c := udpPair(t, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	r := tc.Irecv(ta.Addr(), 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	start := time.Now()
	err := r.Wait(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Wait returned %v after a 50 ms deadline", d)
	}
	if done, err := r.Test(); done || err != nil {
		t.Fatalf("after the wait expired the request is %v, %v; want still pending", done, err)
	}
	long, cancelLong := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelLong()
	if err := ta.Send(long, tc.Addr(), 1, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(long); err != nil || string(r.Message().Data) != "late" {
		t.Fatalf("the request after its message came: %q %v", r.Message().Data, err)
	}

	// An expired wait, then Cancel: the request fails with ErrCanceled and
	// the next message goes to the next receive.
	r = tc.Irecv(ta.Addr(), 2, nil)
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	err = r.Wait(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v", err)
	}
	r.Cancel()
	if err := r.Wait(long); !errors.Is(err, pcor.ErrCanceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	if err := ta.Send(long, tc.Addr(), 2, []byte("next")); err != nil {
		t.Fatal(err)
	}
	if m, err := tc.Recv(long, ta.Addr(), 2); err != nil || string(m.Data) != "next" {
		t.Fatalf("receive after the cancel: %q %v", m.Data, err)
	}
}

// IrecvReuse posts a completed receive again as the same request, which
// then gets the next message; a request it may not reuse (a send's, one
// still pending) is left alone and a new receive is posted.
func TestIrecvReuse(t *testing.T) {
	a, c := udpPair(t, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n, depth = 200, 4
	ring := make([]*pcor.Request, depth)
	for i := range ring {
		ring[i] = tc.Irecv(ta.Addr(), 5, make([]byte, 1))
	}
	first := append([]*pcor.Request(nil), ring...)
	for i := range n {
		if err := ta.Send(ctx, tc.Addr(), 5, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		k := i % depth
		if err := ring[k].Wait(ctx); err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		m := ring[k].Message()
		if len(m.Data) != 1 || m.Data[0] != byte(i) || m.Src != ta.Addr() || m.Tag != 5 {
			t.Fatalf("receive %d: %+v", i, m)
		}
		ring[k] = tc.IrecvReuse(ring[k], ta.Addr(), 5, m.Data)
		if ring[k] != first[k] {
			t.Fatalf("receive %d: a completed receive was not reused", i)
		}
	}
	for _, r := range ring {
		r.Cancel()
	}
	sent := ta.Isend(tc.Addr(), 6, []byte{1})
	if r := ta.IrecvReuse(sent, tc.Addr(), 6, nil); r == sent {
		t.Fatal("a send's request was reused as a receive")
	} else {
		r.Cancel()
	}
	pending := tc.Irecv(ta.Addr(), 7, nil) // nothing comes with tag 7
	r := tc.IrecvReuse(pending, ta.Addr(), 7, nil)
	if r == pending {
		t.Fatal("a pending receive was posted again")
	}
	if err := ta.Send(ctx, tc.Addr(), 7, []byte{2}); err != nil {
		t.Fatal(err)
	}
	if err := pending.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if m := pending.Message(); len(m.Data) != 1 || m.Data[0] != 2 {
		t.Fatalf("the pending receive got %+v", m)
	}
	r.Cancel()
}
