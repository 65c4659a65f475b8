package pcor_test

import (
	"context"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/routing"
)

// Each process prices its own links only, so two processes may each find
// their direct link to a third dear and route to it through the other.
// Here A and B both price their link to C at 10 ms: A's table goes to C
// through B and B's through A. A gateway forwards on the routes every
// member computes alike (the ports' own figures), so messages from A and
// B still reach C rather than bouncing between them until their hop count
// runs out.
func TestMeasuredPricesMakeNoLoop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coord := loopbackCoord(t)
	n := mem.NewNetwork()
	dear := routing.LinkCost{Latency: 10 * time.Millisecond, Bandwidth: 1e6}
	nodes := make([]*pcor.Node, 3)
	for rank := range nodes {
		p, err := n.Listen(string(rune('a' + rank)))
		if err != nil {
			t.Fatal(err)
		}
		var prices *routing.Prices
		if rank < 2 {
			prices = &routing.Prices{}
			prices.Pin(routing.Link{Peer: 2, Fabric: "mem", Network: "n"}, dear)
		}
		nd, err := pcor.Join(ctx, pcor.JoinConfig{Coord: coord, JobKey: 0xfeed, Rank: rank, Size: 3,
			Listen: []pcor.Listen{{Port: p, Network: "n"}}, Prices: prices,
			Node: pcor.Config{UnreachableTimeout: 3 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		nodes[rank] = nd
	}
	for rank, via := range []uint32{1, 0} {
		nd := nodes[rank]
		waitRoute(t, ctx, nd, 2, true)
		for {
			if _, err := nd.Reprice(); err != nil {
				t.Fatal(err)
			}
			if rt, _ := nd.Routes().Lookup(2, 0); rt.NextHop == via {
				break
			}
			select {
			case <-ctx.Done():
				rt, _ := nd.Routes().Lookup(2, 0)
				t.Fatalf("process %d's route to 2: %+v, want through %d", rank, rt, via)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	tc := nodes[2].NewThread()
	for rank := range 2 {
		th := nodes[rank].NewThread()
		for i, sz := range []int{1, 1000, 64 << 10} {
			want := randomBytes(sz, uint64(rank*10+i))
			mctx, mcancel := context.WithTimeout(ctx, 10*time.Second)
			errc := make(chan error, 1)
			go func() { errc <- th.Send(mctx, tc.Addr(), 5, want) }()
			m, err := tc.Recv(mctx, th.Addr(), 5)
			serr := <-errc
			mcancel()
			if err != nil {
				t.Fatalf("from %d, %d bytes: %v", rank, sz, err)
			}
			if string(m.Data) != string(want) {
				t.Fatalf("from %d, %d bytes: message differs", rank, sz)
			}
			if serr != nil {
				t.Fatalf("send from %d, %d bytes: %v", rank, sz, serr)
			}
		}
	}
	if forwarded(nodes[0])+forwarded(nodes[1]) == 0 {
		t.Fatal("nothing forwarded: the routes did not go through a gateway")
	}
}
