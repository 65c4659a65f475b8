package pcor_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/routing"
)

// memJoin joins process rank to the directory at coord with one mem port
// per network given (name -> network), announcing costs.
func memJoin(t *testing.T, ctx context.Context, coord string, rank int, ports map[string]*mem.Network, order []string, costs []routing.LinkCost) *pcor.Node {
	t.Helper()
	var ls []pcor.Listen
	for _, netName := range order {
		p, err := ports[netName].Listen(netName + "-" + string(rune('0'+rank)))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, pcor.Listen{Port: p, Network: netName})
	}
	n, err := pcor.Join(ctx, pcor.JoinConfig{Coord: coord, JobKey: 0xfeed, Rank: rank, Size: 3,
		Listen: ls, Costs: costs, Node: pcor.Config{UnreachableTimeout: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func loopbackCoord(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitRoute waits until n has a route to dst (or, with want false, until
// dst is unreachable).
func waitRoute(t *testing.T, ctx context.Context, n *pcor.Node, dst uint32, want bool) routing.Route {
	t.Helper()
	for {
		rt, ok := n.Routes().Lookup(dst, 0)
		if ok == want {
			return rt
		}
		select {
		case <-ctx.Done():
			t.Fatalf("process %d: route to %d present=%v never came", n.Proc(), dst, want)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func forwarded(n *pcor.Node) (f uint64) {
	for _, s := range n.Stats() {
		f += s.Forwarded
	}
	return f
}

// A and C share no network; B is on both. C joins after A: A's table gains
// a route to C through B, messages of all sizes pass through B in order
// and intact, and when B leaves, what A has pending on C fails with
// ErrUnreachable (no path) and what it has pending on B with ErrPeerDown.
func TestJoinGatewayMem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coord := loopbackCoord(t)
	nets := map[string]*mem.Network{"ab": mem.NewNetwork(), "bc": mem.NewNetwork()}
	a := memJoin(t, ctx, coord, 0, nets, []string{"ab"}, nil)
	b := memJoin(t, ctx, coord, 1, nets, []string{"ab", "bc"}, nil)
	waitRoute(t, ctx, a, 1, true)
	if _, ok := a.Routes().Lookup(2, 0); ok {
		t.Fatal("route to a process not joined yet")
	}
	c := memJoin(t, ctx, coord, 2, nets, []string{"bc"}, nil)
	rt := waitRoute(t, ctx, a, 2, true)
	if rt.NextHop != 1 || rt.Hops != 2 || rt.Network != "ab" {
		t.Fatalf("A's route to C: %+v", rt)
	}
	waitRoute(t, ctx, c, 0, true)
	// B forwards between them: it must know C before A's first message.
	waitRoute(t, ctx, b, 2, true)

	ta, tc := a.NewThread(), c.NewThread()
	sizes := []int{1, 1000, 64 << 10, 1 << 20}
	before := forwarded(b)
	done := make(chan error, 1)
	go func() {
		for i, sz := range sizes {
			m, err := tc.Recv(ctx, ta.Addr(), 5)
			if err != nil {
				done <- err
				return
			}
			if !bytes.Equal(m.Data, randomBytes(sz, uint64(i))) {
				done <- errors.New("message differs or out of order")
				return
			}
		}
		done <- nil
	}()
	for i, sz := range sizes {
		if err := ta.Send(ctx, tc.Addr(), 5, randomBytes(sz, uint64(i))); err != nil {
			t.Fatalf("send %d bytes: %v", sz, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, sz := range sizes {
		total += sz
	}
	fwd := forwarded(b) - before
	t.Logf("B forwarded %d datagrams for %d bytes", fwd, total)
	if fwd < uint64(total/1472) {
		t.Fatalf("B forwarded %d datagrams, want at least %d", fwd, total/1472)
	}

	// Pending requests when the gateway leaves.
	recvC := ta.Irecv(pcor.Addr{Proc: 2, Thread: 0}, 9, nil)
	recvB := ta.Irecv(pcor.Addr{Proc: 1, Thread: 0}, 9, nil)
	b.Close()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	var ue *pcor.UnreachableError
	if err := recvC.Wait(wctx); !errors.Is(err, pcor.ErrUnreachable) || !errors.As(err, &ue) || ue.Proc != 2 || !errors.Is(err, pcor.ErrNoPath) {
		t.Fatalf("receive from C after B left: %v, want unreachable (no path)", err)
	}
	if err := recvB.Wait(wctx); !errors.Is(err, pcor.ErrPeerDown) {
		t.Fatalf("receive from B after it left: %v, want ErrPeerDown", err)
	}
	if err := ta.Send(wctx, tc.Addr(), 5, []byte("x")); !errors.Is(err, pcor.ErrUnreachable) {
		t.Fatalf("send to C after B left: %v", err)
	}
	if u := a.Routes().Unreachable(); len(u) != 1 || u[0] != 2 {
		t.Fatalf("A's unreachable members %v", u)
	}
}

// Two networks between the same pair: "fast" starts quickly but carries
// little, "bulk" starts slowly but carries much. Small messages leave on
// the fast port and large ones on the bulk port, as the table predicts.
func TestJoinTwoNetworksMem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coord := loopbackCoord(t)
	nets := map[string]*mem.Network{"fast": mem.NewNetwork(), "bulk": mem.NewNetwork()}
	costs := []routing.LinkCost{{Latency: 10 * time.Microsecond, Bandwidth: 10e6}, {Latency: 200 * time.Microsecond, Bandwidth: 10e9}}
	a := memJoin(t, ctx, coord, 0, nets, []string{"fast", "bulk"}, costs)
	b := memJoin(t, ctx, coord, 1, nets, []string{"fast", "bulk"}, costs)
	waitRoute(t, ctx, a, 1, true)
	waitRoute(t, ctx, b, 0, true)
	// Crossover: 190 µs / (100 ns - 0.1 ns per byte) = 1902 bytes.
	small, _ := a.Routes().Lookup(1, 1000)
	large, _ := a.Routes().Lookup(1, 1<<20)
	if small.Network != "fast" || large.Network != "bulk" || large.MinSize != 1902 {
		t.Fatalf("routes %+v / %+v", small, large)
	}
	ta, tb := a.NewThread(), b.NewThread()
	sent := func(batch int, size int) [2]uint64 {
		st0 := a.Stats()
		recvd := make(chan error, 1)
		go func() {
			for i := 0; i < batch; i++ {
				if _, err := tb.Recv(ctx, ta.Addr(), 3); err != nil {
					recvd <- err
					return
				}
			}
			recvd <- nil
		}()
		for i := 0; i < batch; i++ {
			if err := ta.Send(ctx, tb.Addr(), 3, randomBytes(size, uint64(i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-recvd; err != nil {
			t.Fatal(err)
		}
		st1 := a.Stats()
		return [2]uint64{st1[0].BytesSent - st0[0].BytesSent, st1[1].BytesSent - st0[1].BytesSent}
	}
	d := sent(50, 500)
	t.Logf("50 x 500 B: fast port sent %d bytes, bulk port %d", d[0], d[1])
	if d[0] < 50*500 || d[1] != 0 {
		t.Fatalf("small messages: bytes sent per port %v", d)
	}
	d = sent(4, 256<<10)
	t.Logf("4 x 256 KiB: fast port sent %d bytes, bulk port %d", d[0], d[1])
	if d[1] < 4*256<<10 || d[0] > 4*256<<10/100 {
		t.Fatalf("large messages: bytes sent per port %v", d)
	}
}

// A member whose only network nobody else is on is unreachable; a receive
// naming it fails at once.
func TestJoinIsolatedMem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	coord := loopbackCoord(t)
	nets := map[string]*mem.Network{"x": mem.NewNetwork(), "y": mem.NewNetwork()}
	a := memJoin(t, ctx, coord, 0, nets, []string{"x"}, nil)
	memJoin(t, ctx, coord, 1, nets, []string{"y"}, nil)
	if err := a.Directory().Wait(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if u := a.Routes().Unreachable(); len(u) != 1 || u[0] != 1 {
		t.Fatalf("unreachable %v", u)
	}
	err := a.NewThread().Irecv(pcor.Addr{Proc: 1, Thread: 0}, 1, nil).Wait(ctx)
	if !errors.Is(err, pcor.ErrUnreachable) {
		t.Fatalf("receive from an isolated member: %v", err)
	}
}
