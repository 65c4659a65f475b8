package routing

import (
	"math"
	"slices"
	"time"
)

// path is one path from the local process, as a line in message size.
type path struct {
	nodes []int32 // process, network and link nodes, from the local process
	ports []int32 // port index of the edge into each node (-1 for the first)
	l     label
}

// segment is a path chosen for messages of from bytes and up (until the
// next segment's from).
type segment struct {
	p    path
	from int64
}

// searcher holds one shortest-path tree per per-byte threshold: the tree
// for threshold b uses only edges whose per-byte cost is at most b and
// minimises the fixed cost.
type searcher struct {
	g     *graph
	trees []*tree
}

func newSearcher(g *graph) *searcher {
	s := &searcher{g: g}
	for _, b := range g.thresholds() {
		s.trees = append(s.trees, g.shortest(b))
	}
	return s
}

// reachable reports whether any path reaches node n (the tree with every
// edge is the last).
func (s *searcher) reachable(n int32) bool {
	return len(s.trees) > 0 && s.trees[len(s.trees)-1].done[n]
}

// path reads the path to dst off t.
func (s *searcher) path(t *tree, dst int32) path {
	var nodes, ports []int32
	for n := dst; n >= 0; n = t.pred[n] {
		nodes = append(nodes, n)
		ports = append(ports, t.port[n])
	}
	slices.Reverse(nodes)
	slices.Reverse(ports)
	return path{nodes: nodes, ports: ports, l: t.label[dst]}
}

// envelope returns the best path to dst for every message size, as
// segments from size 0 up.
//
// A path's cost is T(m) = A + B·m with A its fixed cost and B its largest
// per-byte cost. For the best path P at some size, with bottleneck b, the
// least-fixed-cost path using only edges of per-byte cost ≤ b costs no
// more at that size; so the lower envelope of the lines of the threshold
// trees' paths is the exact optimum at every size.
func (s *searcher) envelope(dst int32) []segment {
	var cands []path
	for _, t := range s.trees {
		if !t.done[dst] {
			continue
		}
		p := s.path(t, dst)
		if !slices.ContainsFunc(cands, func(c path) bool { return sameLine(c.l, p.l) && c.l.hops <= p.l.hops }) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	// The best for the smallest messages: least fixed cost, then least
	// per-byte cost, then fewest hops.
	cur := 0
	for i := range cands {
		if cands[i].l.better(cands[cur].l, 0) {
			cur = i
		}
	}
	segs := []segment{{p: cands[cur]}}
	at := 0.0
	for {
		// The line that first undercuts the current one at larger sizes.
		next, cross := -1, math.Inf(1)
		c := cands[cur].l
		for i, o := range cands {
			if o.l.perByte >= c.perByte {
				continue
			}
			m := (o.l.fixed - c.fixed) / (c.perByte - o.l.perByte)
			m = math.Max(m, at)
			if m < cross || (m == cross && next >= 0 && o.l.better(cands[next].l, math.Inf(1))) {
				next, cross = i, m
			}
		}
		if next < 0 || cross >= math.MaxInt64 {
			return segs
		}
		from := int64(math.Ceil(cross))
		for len(segs) > 0 && segs[len(segs)-1].from >= from {
			segs = segs[:len(segs)-1] // superseded within the same byte
		}
		if len(segs) == 0 {
			from = 0
		}
		segs = append(segs, segment{p: cands[next], from: from})
		cur, at = next, cross
	}
}

// sameLine reports whether two paths cost the same at every size.
func sameLine(a, b label) bool { return a.fixed == b.fixed && a.perByte == b.perByte }

// route turns a path into a Route.
func (g *graph) route(p path) Route {
	var procs []uint32
	for _, n := range p.nodes {
		if g.isProc(n) {
			procs = append(procs, g.procs[n])
		}
	}
	net, next := p.nodes[1], p.nodes[2]
	r := Route{
		Dst:     procs[len(procs)-1],
		NextHop: g.procs[next],
		Hops:    len(procs) - 1,
		Path:    procs,
		Latency: time.Duration(math.Round(p.l.fixed)),
	}
	nk := g.nets[int(net)-len(g.procs)]
	r.Fabric, r.Network = nk.fabric, nk.network
	r.Port = int(p.ports[1])
	r.Addr = g.members[next].Ports[p.ports[2]].Addr
	if p.l.perByte > 0 {
		r.Bandwidth = 1e9 / p.l.perByte
	} else {
		r.Bandwidth = math.Inf(1)
	}
	return r
}
