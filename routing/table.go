package routing

import (
	"math"
	"slices"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// Route is how the local process reaches one destination for messages of
// MinSize to MaxSize bytes.
type Route struct {
	// Dst is the destination process.
	Dst uint32
	// Port is the index of the local port to send on, in the local
	// member's Ports.
	Port int
	// Fabric and Network name the network of the first hop.
	Fabric, Network string
	// NextHop is the process the message is sent to: Dst itself on a
	// direct route, else the first gateway.
	NextHop uint32
	// Addr is NextHop's port address on that network (PortInfo.Addr).
	Addr string
	// Hops is the number of links crossed: 1 on a direct route.
	Hops int
	// Path lists the processes from the local one to Dst, both included.
	// It is shared by every copy of the Route: do not modify it.
	Path []uint32
	// Latency and Bandwidth are the path's figures in the cost model: the
	// fixed cost, and the inverse of the per-byte cost.
	Latency   time.Duration
	Bandwidth float64
	// MinSize and MaxSize bound the message sizes (bytes) this route is
	// chosen for.
	MinSize, MaxSize int64
}

// Cost is the model's time to send size bytes along the route.
func (r *Route) Cost(size int64) time.Duration {
	t := float64(r.Latency)
	if r.Bandwidth > 0 {
		t += float64(size) * 1e9 / r.Bandwidth
	}
	return time.Duration(t)
}

// Direct reports whether the route reaches Dst without a gateway.
func (r *Route) Direct() bool { return r.Hops == 1 }

// Table holds the routes of one process.
type Table struct {
	self        uint32
	routes      []Route // by destination, then by MinSize
	dests       []span  // by destination
	dense       []int32 // dense[proc] = index in dests + 1, when procs are small
	sparse      map[uint32]int32
	unreachable []uint32
}

// span is the routes of one destination: routes[first : first+n].
type span struct {
	dst      uint32
	first, n int32
}

// maxDense bounds the process ids indexed by a slice rather than a map.
const maxDense = 1 << 16

// Build computes the routing table of process self from the membership,
// with the DefaultModel.
func Build(self uint32, members []directory.Member) *Table {
	m := DefaultModel()
	return m.Build(self, members)
}

// Build computes the routing table of process self from the membership.
// Members repeating an earlier member's process id are ignored, and so are
// ports without a fabric kind or address. If self is not a member, every
// other process is unreachable.
//
// Where some of the local process's links are priced in two regimes
// (LinkCost.Large), the sizes where a regime starts cut the sizes into
// ranges in which every link is one line; each range's routes are the
// lower envelope of that range's paths, so the table stays exact.
func (m *Model) Build(self uint32, members []directory.Member) *Table {
	cuts := []int64{0}
	for _, c := range m.Links {
		if _, _, large := c.at(math.MaxInt64); large {
			cuts = append(cuts, c.Large.From)
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	// The routes of each destination, by size.
	var order []uint32
	byDst := map[uint32][]Route{}
	var unreachable []uint32
	for i, lo := range cuts {
		hi := int64(math.MaxInt64)
		if i+1 < len(cuts) {
			hi = cuts[i+1] - 1
		}
		g := newGraph(m, self, members, lo)
		s := newSearcher(g)
		for d := range g.procs {
			dst := int32(d)
			if dst == g.self {
				continue
			}
			if !s.reachable(dst) {
				if i == 0 {
					unreachable = append(unreachable, g.procs[d])
				}
				continue
			}
			if i == 0 {
				order = append(order, g.procs[d])
			}
			segs := s.envelope(dst)
			for j, sg := range segs {
				from, to := sg.from, int64(math.MaxInt64)
				if j+1 < len(segs) {
					to = segs[j+1].from - 1
				}
				from, to = max(from, lo), min(to, hi)
				if from > to {
					continue
				}
				r := g.route(sg.p)
				r.MinSize, r.MaxSize = from, to
				rs := byDst[r.Dst]
				if n := len(rs); n > 0 && sameRoute(rs[n-1], r) {
					rs[n-1].MaxSize = to // the same path and line across a cut
					continue
				}
				byDst[r.Dst] = append(rs, r)
			}
		}
	}
	t := &Table{self: self, unreachable: unreachable}
	for _, dst := range order {
		first := int32(len(t.routes))
		t.routes = append(t.routes, byDst[dst]...)
		t.dests = append(t.dests, span{dst, first, int32(len(t.routes)) - first})
	}
	t.index()
	return t
}

// sameRoute reports whether a and b take the same path at the same cost
// line (their size ranges aside).
func sameRoute(a, b Route) bool {
	a.MinSize, a.MaxSize, b.MinSize, b.MaxSize = 0, 0, 0, 0
	return a.Port == b.Port && a.NextHop == b.NextHop && a.Addr == b.Addr && a.Latency == b.Latency &&
		a.Bandwidth == b.Bandwidth && slices.Equal(a.Path, b.Path)
}

// index fills the destination index.
func (t *Table) index() {
	if n := len(t.dests); n > 0 && t.dests[n-1].dst < maxDense {
		t.dense = make([]int32, t.dests[n-1].dst+1)
		for i, d := range t.dests {
			t.dense[d.dst] = int32(i) + 1
		}
		return
	}
	t.sparse = make(map[uint32]int32, len(t.dests))
	for i, d := range t.dests {
		t.sparse[d.dst] = int32(i)
	}
}

// Self is the process the table belongs to.
func (t *Table) Self() uint32 { return t.self }

// Lookup returns the route for a message of size bytes to dst. It reports
// false when dst is unreachable, unknown, or the local process itself
// (which needs no fabric). A negative size counts as zero.
func (t *Table) Lookup(dst uint32, size int64) (Route, bool) {
	var i int32 = -1
	if t.dense != nil {
		if int(dst) < len(t.dense) {
			i = t.dense[dst] - 1
		}
	} else if j, ok := t.sparse[dst]; ok {
		i = j
	}
	if i < 0 {
		return Route{}, false
	}
	sp := t.dests[i]
	k := sp.first + sp.n - 1
	for k > sp.first && size < t.routes[k].MinSize {
		k--
	}
	return t.routes[k], true
}

// Routes returns every route, by destination and then by message size.
func (t *Table) Routes() []Route {
	out := make([]Route, len(t.routes))
	copy(out, t.routes)
	return out
}

// Destinations returns the reachable processes, in increasing order.
func (t *Table) Destinations() []uint32 {
	out := make([]uint32, len(t.dests))
	for i, d := range t.dests {
		out[i] = d.dst
	}
	return out
}

// Unreachable returns the members other than the local process that no
// path reaches, in increasing order.
func (t *Table) Unreachable() []uint32 {
	return append([]uint32(nil), t.unreachable...)
}
