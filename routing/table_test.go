package routing

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
)

func mustRoute(t *testing.T, tb *Table, dst uint32, size int64) Route {
	t.Helper()
	r, ok := tb.Lookup(dst, size)
	if !ok {
		t.Fatalf("no route from %d to %d for %d bytes", tb.Self(), dst, size)
	}
	return r
}

func TestSharedFabric(t *testing.T) {
	ms := []directory.Member{member(3, udp("lan")), member(1, udp("lan")), member(2, udp("lan")), member(7, udp("lan"))}
	tb := Build(1, ms)
	for _, dst := range []uint32{2, 3, 7} {
		r := mustRoute(t, tb, dst, 100)
		if r.Dst != dst || r.NextHop != dst || r.Hops != 1 || !r.Direct() || r.Port != 0 ||
			r.Fabric != "udp" || r.Network != "lan" || !slices.Equal(r.Path, []uint32{1, dst}) {
			t.Errorf("route to %d: %+v", dst, r)
		}
		if want := member(dst, udp("lan")).Ports[0].Addr; r.Addr != want {
			t.Errorf("route to %d: addr %q, want %q", dst, r.Addr, want)
		}
		if r.Latency != 50*time.Microsecond || r.Bandwidth != 1e9 {
			t.Errorf("route to %d: default udp figures expected, got %v %v", dst, r.Latency, r.Bandwidth)
		}
		if r.MinSize != 0 || r.MaxSize != math.MaxInt64 {
			t.Errorf("route to %d: sizes %d-%d, want all", dst, r.MinSize, r.MaxSize)
		}
	}
	if _, ok := tb.Lookup(1, 10); ok {
		t.Error("route to self")
	}
	if _, ok := tb.Lookup(4, 10); ok {
		t.Error("route to a process that is not a member")
	}
	if got := tb.Destinations(); !slices.Equal(got, []uint32{2, 3, 7}) {
		t.Errorf("Destinations() = %v", got)
	}
	if len(tb.Routes()) != 3 || len(tb.Unreachable()) != 0 {
		t.Errorf("%d routes, unreachable %v", len(tb.Routes()), tb.Unreachable())
	}
}

func TestOneGateway(t *testing.T) {
	ms := []directory.Member{
		member(1, udp("x")),
		member(2, udp("y"), udp("x")), // the gateway
		member(3, udp("y")),
	}
	tb := Build(1, ms)
	r := mustRoute(t, tb, 3, 1000)
	if r.NextHop != 2 || r.Addr != ms[1].Ports[1].Addr || r.Port != 0 || r.Network != "x" ||
		r.Hops != 2 || r.Direct() || !slices.Equal(r.Path, []uint32{1, 2, 3}) {
		t.Fatalf("route 1→3: %+v", r)
	}
	// Two default udp links and one gateway.
	if want := 2*50*time.Microsecond + DefaultModel().Forward; r.Latency != want {
		t.Errorf("latency %v, want %v", r.Latency, want)
	}
	if r.Bandwidth != 1e9 {
		t.Errorf("bandwidth %v, want a link's (forwarding fragment by fragment)", r.Bandwidth)
	}
	// From the other side, and from the gateway itself.
	back := mustRoute(t, Build(3, ms), 1, 1000)
	if back.NextHop != 2 || back.Addr != ms[1].Ports[0].Addr || !slices.Equal(back.Path, []uint32{3, 2, 1}) {
		t.Fatalf("route 3→1: %+v", back)
	}
	g := Build(2, ms)
	if r1, r3 := mustRoute(t, g, 1, 0), mustRoute(t, g, 3, 0); r1.Port != 1 || r3.Port != 0 || !r1.Direct() || !r3.Direct() {
		t.Fatalf("gateway routes: %+v %+v", r1, r3)
	}
}

func TestTwoGatewaysInARow(t *testing.T) {
	ms := []directory.Member{
		member(10, udp("a")),
		member(11, udp("a"), udp("b")),
		member(12, udp("b"), udp("c")),
		member(13, udp("c")),
	}
	tb := Build(10, ms)
	r := mustRoute(t, tb, 13, 1<<20)
	if r.NextHop != 11 || r.Hops != 3 || !slices.Equal(r.Path, []uint32{10, 11, 12, 13}) || r.Addr != ms[1].Ports[0].Addr {
		t.Fatalf("route 10→13: %+v", r)
	}
	if r2 := mustRoute(t, tb, 12, 0); r2.NextHop != 11 || r2.Hops != 2 {
		t.Fatalf("route 10→12: %+v", r2)
	}
	// The middle gateway routes both ways.
	mid := Build(11, ms)
	if r := mustRoute(t, mid, 13, 0); r.NextHop != 12 || r.Network != "b" || r.Port != 1 {
		t.Fatalf("route 11→13: %+v", r)
	}
}

func TestGatewayLeaving(t *testing.T) {
	ms := []directory.Member{
		member(1, udp("x")),
		member(2, udp("x"), udp("y")),
		member(3, udp("x"), udp("y")),
		member(4, udp("y")),
	}
	// Equal gateways: the lower process id.
	if r := mustRoute(t, Build(1, ms), 4, 0); r.NextHop != 2 {
		t.Fatalf("route via %d, want 2: %+v", r.NextHop, r)
	}
	ms = without(ms, 2)
	r := mustRoute(t, Build(1, ms), 4, 0)
	if r.NextHop != 3 || !slices.Equal(r.Path, []uint32{1, 3, 4}) {
		t.Fatalf("after gateway 2 left: %+v", r)
	}
	ms = without(ms, 3)
	tb := Build(1, ms)
	if r, ok := tb.Lookup(4, 0); ok {
		t.Fatalf("route to 4 with no gateway left: %+v", r)
	}
	if u := tb.Unreachable(); !slices.Equal(u, []uint32{4}) {
		t.Fatalf("Unreachable() = %v, want [4]", u)
	}
}

func TestCheaperGatewayWins(t *testing.T) {
	slow := port("udp", "y", 500*time.Microsecond, 0)
	ms := []directory.Member{
		member(1, udp("x")),
		member(2, udp("x"), slow),
		member(3, udp("x"), udp("y")),
		member(4, udp("y")),
	}
	if r := mustRoute(t, Build(1, ms), 4, 0); r.NextHop != 3 {
		t.Fatalf("route via %d, want the faster gateway 3", r.NextHop)
	}
}

func TestNodeJoining(t *testing.T) {
	ms := []directory.Member{member(1, udp("x")), member(2, udp("x"), udp("y"))}
	tb := Build(1, ms)
	if _, ok := tb.Lookup(5, 0); ok {
		t.Fatal("route to a process not yet joined")
	}
	ms = append(ms, member(5, udp("y")))
	tb = Build(1, ms)
	if r := mustRoute(t, tb, 5, 0); r.NextHop != 2 || r.Hops != 2 {
		t.Fatalf("route to the new process: %+v", r)
	}
	if got := tb.Destinations(); !slices.Equal(got, []uint32{2, 5}) {
		t.Fatalf("Destinations() = %v", got)
	}
}

func TestSizeChoosesRoute(t *testing.T) {
	const (
		l1, w1 = 20 * time.Microsecond, 100e6 // quick to start, slow
		l2, w2 = 100 * time.Microsecond, 10e9 // slow to start, fast
	)
	ms := []directory.Member{
		member(1, port("udp", "eth", l1, w1), port("udp", "ib", l2, w2)),
		member(2, port("udp", "eth", l1, w1), port("udp", "ib", l2, w2)),
	}
	tb := Build(1, ms)
	// T1(m) = T2(m) at m* = (l2 - l1) / (1/w1 - 1/w2).
	cross := float64(l2-l1) / 1e9 / (1/w1 - 1/w2)
	first := int64(math.Ceil(cross))
	if first < 8000 || first > 8200 {
		t.Fatalf("crossover %d bytes out of the expected range", first)
	}
	for _, c := range []struct {
		size int64
		net  string
	}{{0, "eth"}, {-5, "eth"}, {1000, "eth"}, {first - 1, "eth"}, {first, "ib"}, {1 << 20, "ib"}, {math.MaxInt64, "ib"}} {
		r := mustRoute(t, tb, 2, c.size)
		if r.Network != c.net || r.Port != slices.IndexFunc(ms[0].Ports, func(p directory.PortInfo) bool { return p.Network == c.net }) {
			t.Errorf("%d bytes: network %s port %d, want %s", c.size, r.Network, r.Port, c.net)
		}
		if r.Addr != ms[1].Ports[r.Port].Addr {
			t.Errorf("%d bytes: addr %s", c.size, r.Addr)
		}
	}
	rs := tb.Routes()
	if len(rs) != 2 || rs[0].MinSize != 0 || rs[0].MaxSize != first-1 || rs[1].MinSize != first || rs[1].MaxSize != math.MaxInt64 {
		t.Fatalf("routes %+v", rs)
	}
}

func TestThreeNetworksEnvelope(t *testing.T) {
	nets := []directory.PortInfo{
		port("udp", "a", 10*time.Microsecond, 50e6),
		port("udp", "b", 40*time.Microsecond, 1e9),
		port("rdma", "c", 200*time.Microsecond, 20e9),
		port("udp", "d", 300*time.Microsecond, 1e9), // never best
	}
	ms := []directory.Member{member(1, slices.Clone(nets)...), member(2, slices.Clone(nets)...)}
	tb := Build(1, ms)
	var used []string
	for _, r := range tb.Routes() {
		used = append(used, r.Network)
	}
	if !slices.Equal(used, []string{"a", "b", "c"}) {
		t.Fatalf("envelope %v, want a, b, c", used)
	}
	// Every size gets the cheapest network, computed here directly.
	for size := int64(1); size < 1<<32; size = size*5/4 + 1 {
		r := mustRoute(t, tb, 2, size)
		best, bestNet := math.Inf(1), ""
		for _, p := range nets {
			if c := float64(p.Latency) + float64(size)*1e9/p.Bandwidth; c < best {
				best, bestNet = c, p.Network
			}
		}
		if r.Network != bestNet {
			t.Fatalf("%d bytes: %s, want %s", size, r.Network, bestNet)
		}
	}
}

func TestBadInput(t *testing.T) {
	ms := []directory.Member{
		member(1, udp("x"), directory.PortInfo{Network: "x", Addr: "nofabric"}),
		member(2, port("udp", "x", -time.Second, math.NaN())),
		member(2, udp("z")), // repeated id: ignored
		{Proc: 3},           // no ports
		member(4, port("udp", "x", 0, math.Inf(1)), directory.PortInfo{Fabric: "udp", Network: "y"}),
		member(5, port("warp", "x", 0, 0)), // unknown fabric on x: no common pair with 1
	}
	tb := Build(1, ms)
	r := mustRoute(t, tb, 2, 10)
	if r.Network != "x" || r.Latency != 50*time.Microsecond || r.Bandwidth != 1e9 {
		t.Fatalf("invalid figures not replaced by defaults: %+v", r)
	}
	if r := mustRoute(t, tb, 4, 10); r.Bandwidth != 1e9 {
		t.Fatalf("infinite bandwidth not replaced: %+v", r)
	}
	if u := tb.Unreachable(); !slices.Equal(u, []uint32{3, 5}) {
		t.Fatalf("Unreachable() = %v, want [3 5]", u)
	}
	// A process that is not a member reaches no one.
	alone := Build(9, ms)
	if len(alone.Routes()) != 0 || len(alone.Unreachable()) != 5 {
		t.Fatalf("non-member: routes %v unreachable %v", alone.Routes(), alone.Unreachable())
	}
	if len(Build(1, nil).Routes()) != 0 {
		t.Fatal("routes from an empty membership")
	}
}

func TestSparseProcessIDs(t *testing.T) {
	ms := []directory.Member{member(1, udp("x")), member(1<<31, udp("x")), member(70000, udp("x"))}
	tb := Build(1, ms)
	for _, d := range []uint32{1 << 31, 70000} {
		if r := mustRoute(t, tb, d, 0); r.Dst != d {
			t.Fatalf("route to %d: %+v", d, r)
		}
	}
	if _, ok := tb.Lookup(2, 0); ok {
		t.Fatal("route to a non-member")
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	ms := []directory.Member{
		member(1, port("udp", "eth", 20*time.Microsecond, 100e6), port("udp", "ib", 100*time.Microsecond, 10e9)),
		member(2, port("udp", "eth", 20*time.Microsecond, 100e6), port("udp", "ib", 100*time.Microsecond, 10e9)),
	}
	tb := Build(1, ms)
	var sink int
	if n := testing.AllocsPerRun(1000, func() {
		r, _ := tb.Lookup(2, 1<<20)
		sink += r.Port
	}); n != 0 {
		t.Fatalf("Lookup allocates %v times", n)
	}
}
