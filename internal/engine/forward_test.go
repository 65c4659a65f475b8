package engine

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/faulty"
	"github.com/pcor-go/pcor/fabric/mem"
)

// A and C share no network; B has a port on each and forwards.
func TestForwardThroughGateway(t *testing.T) {
	ab, bc := mem.NewNetwork(), mem.NewNetwork()
	pa, _ := ab.Listen("a")
	pb1, _ := ab.Listen("b1")
	pb2, _ := bc.Listen("b2")
	pc, _ := bc.Listen("c")
	lossy := faulty.Wrap(pb2, faulty.Faults{Seed: 3, Loss: 0.05})
	mk := func(proc ProcID) *Engine {
		e, err := New(Config{Proc: proc, JobKey: 9})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	a, b, c := mk(0), mk(1), mk(2)
	a.AddPort(pa, Blocking)
	b.AddPort(pb1, Blocking)
	b.AddPort(lossy, Blocking)
	c.AddPort(pc, Blocking)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.SetPeer(1, 0, "b1"))
	must(a.SetPeer(2, 0, "b1")) // via the gateway
	must(b.SetPeer(0, 0, "a"))
	must(b.SetPeer(2, 1, "c"))
	must(c.SetPeer(1, 0, "b2"))
	must(c.SetPeer(0, 0, "b2")) // via the gateway
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sends []*Request
	sizes := []int{1, 1000, 70000, 1 << 20, 16 << 20}
	for i, n := range sizes {
		s := a.newSend(0, 2, 0, Tag(i), pattern(n, uint64(n)))
		a.post(s)
		sends = append(sends, s)
	}
	for i, n := range sizes {
		r := c.newRecv(0, 0, 0, Tag(i), nil)
		c.post(r)
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("%d B: %v", n, err)
		}
		if !bytes.Equal(r.Data(), pattern(n, uint64(n))) {
			t.Fatalf("%d B differ", n)
		}
	}
	for _, s := range sends {
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st := b.Stats()
	if st[0].Forwarded == 0 || st[1].Forwarded == 0 {
		t.Fatalf("gateway forwarded %d and %d", st[0].Forwarded, st[1].Forwarded)
	}
	if b.mcbsInUse() != 0 {
		t.Fatal("the gateway reassembled messages")
	}
	t.Logf("gateway forwarded %d and %d datagrams; sender retransmitted %d", st[0].Forwarded, st[1].Forwarded, a.Stats()[0].Retransmits)
}

// Small messages take the low-latency route and large ones the
// high-bandwidth route.
func TestRouteBySize(t *testing.T) {
	n1, n2 := mem.NewNetwork(), mem.NewNetwork()
	a1, _ := n1.Listen("a1")
	b1, _ := n1.Listen("b1")
	a2, _ := n2.Listen("a2")
	b2, _ := n2.Listen("b2")
	a, _ := New(Config{Proc: 0, JobKey: 1})
	b, _ := New(Config{Proc: 1, JobKey: 1})
	defer a.Close()
	defer b.Close()
	a.AddPort(a1, Blocking)
	a.AddPort(a2, Blocking)
	b.AddPort(b1, Blocking)
	b.AddPort(b2, Blocking)
	if err := a.SetRoutes(1, []RouteSpec{{Port: 0, Endpoint: "b1"}, {Port: 1, Endpoint: "b2", MinSize: 4096}}); err != nil {
		t.Fatal(err)
	}
	b.SetPeer(0, 0, "a1")
	before := *a.peer(1).routes.Load()
	a.SetRoutes(1, []RouteSpec{{Port: 0, Endpoint: "b1"}, {Port: 1, Endpoint: "b2", MinSize: 4096}})
	if after := *a.peer(1).routes.Load(); after[0] != before[0] || after[1] != before[1] {
		t.Fatal("setting the same routes again replaced them")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range []int{10, 100000} {
		s := a.newSend(0, 1, 0, 0, make([]byte, n))
		a.post(s)
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st := a.Stats()
	// Retransmissions may repeat a datagram, but only on its route.
	if st[0].FragsSent < 1 || st[0].BytesSent >= 1000 || st[1].FragsSent < 2 || st[1].BytesSent < 100000 {
		t.Fatalf("fragments per port: %+v, %+v", st[0], st[1])
	}
}
