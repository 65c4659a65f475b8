package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/shm"
)

// A fabric's report of a lost destination reaches the engine: an engine on
// a shared-memory port whose peer's port closed in the middle of a 64 MiB
// message (the ring fills, the fabric finds its receiver gone) fails that
// send, a receive waiting on the peer, a new send and a new receive naming
// it with ErrPeerDown within seconds, far inside the unreachable timeout.
func TestFabricLostPeer(t *testing.T) {
	const unreachable = time.Minute
	var es [2]*Engine
	var eps [2]string
	for i := range es {
		// Process 1 cannot take the whole message without a receive, so
		// it is still streaming when its port closes.
		e, err := New(Config{Proc: ProcID(i), JobKey: 0xbeef, UnreachableTimeout: unreachable, RecvBudget: 32 << 20})
		if err != nil {
			t.Fatal(err)
		}
		pt, err := shm.Listen("", shm.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.AddPort(pt, Blocking); err != nil {
			t.Fatal(err)
		}
		es[i], eps[i] = e, pt.LocalEndpoint().String()
		t.Cleanup(func() { e.Close() })
	}
	for i, e := range es {
		if err := e.SetPeer(ProcID(1-i), 0, eps[1-i]); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*unreachable)
	defer cancel()
	// Heard from: a first message each way.
	r := es[0].newRecv(0, 1, 0, 1, nil)
	es[0].post(r)
	s := es[1].newSend(0, 0, 0, 1, []byte("hello"))
	es[1].post(s)
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	posted := es[0].newRecv(0, 1, 0, 2, nil) // waits on process 1
	es[0].post(posted)
	big := es[0].newSend(0, 1, 0, 3, make([]byte, 64<<20)) // never received
	es[0].post(big)
	for es[1].Stats()[0].FragsRecv < 20 {
		time.Sleep(100 * time.Microsecond)
	}
	probed := make(chan error, 1) // a probe waiting on process 1
	go func() {
		_, err := es[0].probe(ctx, 0, 1, 0, 6)
		probed <- err
	}()
	es[1].Close()
	start := time.Now()
	for _, c := range []struct {
		what string
		r    *Request
	}{{"the send under way", big}, {"the receive waiting on it", posted}} {
		err := c.r.Wait(ctx)
		if !errors.Is(err, ErrPeerDown) {
			t.Fatalf("%s: %v, want ErrPeerDown", c.what, err)
		}
		t.Logf("%s failed %v after the peer closed: %v", c.what, time.Since(start).Round(time.Millisecond), err)
	}
	if d := time.Since(start); d > unreachable/4 {
		t.Errorf("the lost peer took %v to report (unreachable timeout %v)", d, unreachable)
	}
	late := es[0].newSend(0, 1, 0, 4, []byte("late"))
	es[0].post(late)
	if err := late.Wait(ctx); !errors.Is(err, ErrPeerDown) {
		t.Errorf("a send after the loss: %v, want ErrPeerDown", err)
	}
	lateRecv := es[0].newRecv(0, 1, 0, 5, nil)
	es[0].post(lateRecv)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := lateRecv.Wait(wctx); !errors.Is(err, ErrPeerDown) {
		t.Errorf("a receive naming the lost process, posted after the loss: %v, want ErrPeerDown", err)
	}
	select {
	case err := <-probed:
		if !errors.Is(err, ErrPeerDown) {
			t.Errorf("a probe waiting on the lost process: %v, want ErrPeerDown", err)
		}
	case <-wctx.Done():
		t.Error("a probe waiting on the lost process still waits")
	}
	if _, err := es[0].probe(wctx, 0, 1, 0, 7); !errors.Is(err, ErrPeerDown) {
		t.Errorf("a probe naming the lost process, after the loss: %v, want ErrPeerDown", err)
	}
}
