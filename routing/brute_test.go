package routing

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// bruteCost is the least cost from self to dst for size bytes over every
// simple path of processes and every choice of ports on each link,
// computed by enumeration: a link costs the mean of its ports' latencies
// (or the model's Links entry), a path the sum of its links' latencies
// plus Forward per gateway, plus size times its slowest link's per-byte
// cost.
func bruteCost(model *Model, self, dst uint32, ms []directory.Member, size float64) float64 {
	byProc := map[uint32]directory.Member{}
	for _, m := range ms {
		byProc[m.Proc] = m
	}
	type option struct{ fixed, perByte float64 }
	links := func(a, b directory.Member) []option {
		var out []option
		for _, p := range a.Ports {
			for _, q := range b.Ports {
				if p.Fabric != q.Fabric || p.Network != q.Network || p.Fabric == "" || p.Addr == "" || q.Addr == "" {
					continue
				}
				pf, pb := model.portCost(&p)
				qf, qb := model.portCost(&q)
				o := option{(pf + qf) / 2, max(pb, qb)}
				if a.Proc == self {
					if c, ok := model.Links[Link{b.Proc, p.Fabric, p.Network}]; ok {
						lat, bw := c.Latency, c.Bandwidth
						if lat > 0 {
							o.fixed = float64(lat)
						}
						if c.Large.From > 0 && c.Large.Bandwidth > 0 && int64(size) >= c.Large.From {
							// The large regime's line, whole.
							lat, bw = c.Large.Latency, c.Large.Bandwidth
							o.fixed = float64(lat)
						}
						if bw > 0 {
							o.perByte = 1e9 / bw
						}
					}
				}
				out = append(out, o)
			}
		}
		return out
	}
	best := math.Inf(1)
	visited := map[uint32]bool{self: true}
	var walk func(at uint32, fixed, perByte float64)
	walk = func(at uint32, fixed, perByte float64) {
		if at == dst {
			best = min(best, fixed+size*perByte)
			return
		}
		for _, m := range ms {
			if visited[m.Proc] {
				continue
			}
			for _, o := range links(byProc[at], m) {
				f := fixed + o.fixed
				if at != self {
					f += float64(model.Forward)
				}
				visited[m.Proc] = true
				walk(m.Proc, f, max(perByte, o.perByte))
				visited[m.Proc] = false
			}
		}
	}
	walk(self, 0, 0)
	return best
}

// randomMembers returns n processes on a few networks with varied figures.
func randomMembers(r *rand.Rand, n int) []directory.Member {
	nets := []string{"a", "b", "c", "d"}
	kinds := []string{"udp", "rdma"}
	var ms []directory.Member
	for p := range n {
		var ports []directory.PortInfo
		for range 1 + r.IntN(3) {
			pi := port(kinds[r.IntN(2)], nets[r.IntN(len(nets))], 0, 0)
			if r.IntN(3) > 0 {
				pi.Latency = time.Duration(1+r.IntN(200)) * time.Microsecond
				pi.Bandwidth = float64(1+r.IntN(1000)) * 1e7
			}
			ports = append(ports, pi)
		}
		ms = append(ms, member(uint32(p), ports...))
	}
	return ms
}

// checkRoute verifies that r is a well-formed path through ms.
func checkRoute(ms []directory.Member, self uint32, r Route) error {
	byProc := map[uint32]directory.Member{}
	for _, m := range ms {
		byProc[m.Proc] = m
	}
	if r.Path[0] != self || r.Path[len(r.Path)-1] != r.Dst || r.NextHop != r.Path[1] || r.Hops != len(r.Path)-1 {
		return fmt.Errorf("inconsistent route %+v", r)
	}
	lp := byProc[self].Ports[r.Port]
	if lp.Fabric != r.Fabric || lp.Network != r.Network {
		return fmt.Errorf("local port %d is on %s/%s, route on %s/%s", r.Port, lp.Fabric, lp.Network, r.Fabric, r.Network)
	}
	if !slices.ContainsFunc(byProc[r.NextHop].Ports, func(p directory.PortInfo) bool {
		return p.Addr == r.Addr && p.Fabric == r.Fabric && p.Network == r.Network
	}) {
		return fmt.Errorf("next hop %d has no port %s on %s/%s", r.NextHop, r.Addr, r.Fabric, r.Network)
	}
	return nil
}

func TestMatchesEnumeration(t *testing.T) {
	model := DefaultModel()
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int64{0, 1, 100, 1500, 9000, 65536, 1 << 20, 1 << 26, 1 << 34}
	for range 20 {
		sizes = append(sizes, rng.Int64N(1<<25))
	}
	multiHop, multiSize, regimes := 0, 0, 0
	for trial := range 150 {
		ms := randomMembers(rng, 2+rng.IntN(5))
		self := uint32(rng.IntN(len(ms)))
		model.Links = nil
		if trial%2 == 1 {
			// Measured prices for some of the local process's links.
			model.Links = map[Link]LinkCost{}
			for _, p := range ms[self].Ports {
				for _, m := range ms {
					if m.Proc != self && rng.IntN(2) == 0 {
						c := LinkCost{
							Latency:   time.Duration(1+rng.IntN(300)) * time.Microsecond,
							Bandwidth: float64(1+rng.IntN(1000)) * 1e7}
						if trial%4 == 3 && rng.IntN(2) == 0 {
							// Two regimes: from a size on, a line
							// that may start below zero.
							c.Large = Regime{From: 1 << rng.IntN(24),
								Latency:   time.Duration(rng.IntN(600)-300) * time.Microsecond,
								Bandwidth: float64(1+rng.IntN(1000)) * 1e6}
							regimes++
						}
						model.Links[Link{m.Proc, p.Fabric, p.Network}] = c
					}
				}
			}
		}
		tb := model.Build(self, ms)
		rs := tb.Routes()
		for i, r := range rs {
			if r.Hops > 1 {
				multiHop++
			}
			if i > 0 && rs[i-1].Dst == r.Dst {
				multiSize++
			}
		}
		for _, m := range ms {
			if m.Proc == self {
				continue
			}
			for _, size := range sizes {
				want := bruteCost(&model, self, m.Proc, ms, float64(size))
				r, ok := tb.Lookup(m.Proc, size)
				if ok != !math.IsInf(want, 1) {
					t.Fatalf("trial %d: %d→%d: route %v, enumeration cost %v", trial, self, m.Proc, ok, want)
				}
				if !ok {
					continue
				}
				if err := checkRoute(ms, self, r); err != nil {
					t.Fatalf("trial %d: %v", trial, err)
				}
				got := float64(r.Latency) + float64(size)*1e9/r.Bandwidth
				if math.Abs(got-want) > 1+1e-9*want {
					t.Fatalf("trial %d: %d→%d, %d bytes: route %v costs %.1f ns, best path %.1f ns\n%+v",
						trial, self, m.Proc, size, r.Path, got, want, ms)
				}
			}
		}
	}
	// The topologies must exercise gateways and size-dependent choices.
	if multiHop < 20 || multiSize < 20 || regimes < 20 {
		t.Fatalf("only %d multi-hop routes, %d size crossovers and %d links in two regimes", multiHop, multiSize, regimes)
	}
	t.Logf("%d multi-hop routes, %d size crossovers, %d links in two regimes", multiHop, multiSize, regimes)
}
