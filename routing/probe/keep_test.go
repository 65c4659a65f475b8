package probe

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/routing"
)

const keepJobKey = 0x6b656570

// TestKeeperReprices: two nodes joined through a directory, each with a
// port on two loopback networks, announce network "a" as far cheaper
// (0.1 µs, 1 TB/s) than "b" (2 µs, 100 GB/s): the table sends every size
// over "a". A pcor message over loopback UDP really takes several µs
// whatever the network's name (system calls on both sides), so once a
// Keeper has measured "a" the live node prices it from the measurement
// and its routes move to "b"; the route's figures are the fitted ones.
func TestKeeperReprices(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := directory.NewServer(ln, directory.ServerConfig{JobKey: keepJobKey, Size: 2, HeartbeatTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	listen := []pcor.Listen{{Addr: "127.0.0.1:0", Network: "a"}, {Addr: "127.0.0.1:0", Network: "b"}}
	costs := []routing.LinkCost{{Latency: 100 * time.Nanosecond, Bandwidth: 1e12}, {Latency: 2 * time.Microsecond, Bandwidth: 100e9}}
	var prices routing.Prices
	nodes := make([]*pcor.Node, 2)
	for r := range nodes {
		cfg := pcor.JoinConfig{Coord: ln.Addr().String(), JobKey: keepJobKey, Rank: r, Size: 2,
			Directory: directory.ServeNever, Listen: listen, Costs: costs}
		if r == 0 {
			cfg.Prices = &prices
		}
		n, err := pcor.Join(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes[r] = n
	}
	for _, n := range nodes {
		if err := n.Directory().Wait(ctx, 2); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ectx, stop := context.WithCancel(ctx)
	defer stop()
	wg.Add(1)
	go func() {
		defer wg.Done()
		Echo(ectx, nodes[1].Thread(0))
	}()

	rt, ok := nodes[0].Routes().Lookup(1, 16)
	if !ok || rt.Network != "a" {
		t.Fatalf("before measuring: route %+v, want network a", rt)
	}
	k := &Keeper{Node: nodes[0], Prices: &prices, EchoThread: 0, Reps: 10}
	changed, err := k.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	la := routing.Link{Peer: 1, Fabric: "udp", Network: "a"}
	if len(changed) != 1 || changed[0] != la {
		t.Fatalf("repriced %v, want [%v]", changed, la)
	}
	measured := prices.Links()[la]
	t.Logf("link a measured at %v, %.3g B/s", measured.Latency, measured.Bandwidth)
	for _, size := range []int64{16, 4 << 10, 64 << 10} {
		rt, ok := nodes[0].Routes().Lookup(1, size)
		if !ok || rt.Network != "b" {
			t.Errorf("after measuring, %d B: route %+v, want network b (a measured at %+v)", size, rt, measured)
		}
	}
	// Pinning b dear brings the route back to a, at a's measured price.
	prices.Pin(routing.Link{Peer: 1, Fabric: "udp", Network: "b"}, routing.LinkCost{Latency: time.Second, Bandwidth: 1})
	if _, err := nodes[0].Reprice(); err != nil {
		t.Fatal(err)
	}
	rt, ok = nodes[0].Routes().Lookup(1, 16)
	if !ok || rt.Network != "a" || rt.Latency != measured.Latency {
		t.Errorf("with b pinned dear: route %+v, want network a at its measured %v", rt, measured.Latency)
	}
}
