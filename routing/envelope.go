package routing

import (
	"math"
	"slices"
	"time"
)

// path is one path from the local process, as a line in message size.
type path struct {
	nodes []int32 // process and network nodes, from the local process
	ports []int32 // port index of the edge into each node (-1 for the first)
	l     label
}

// segment is a path chosen for messages of from bytes and up (until the
// next segment's from).
type segment struct {
	p    path
	from int64
}

// searcher caches shortest-path trees by message size: destinations of one
// membership mostly share their crossovers.
type searcher struct {
	g     *graph
	trees map[float64]*tree
}

func (s *searcher) tree(m float64) *tree {
	t, ok := s.trees[m]
	if !ok {
		t = s.g.shortest(m)
		s.trees[m] = t
	}
	return t
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

// sameLine reports whether two paths cost the same at every size.
func sameLine(a, b label) bool { return a.fixed == b.fixed && a.perByte == b.perByte }

// maxDepth bounds the envelope search; an envelope has few segments.
const maxDepth = 32

// envelope returns the lower envelope of path costs to dst between lo,
// the best path for the smallest messages of the range, and hi, the best
// for the largest, as segments starting at lo (from 0).
func (s *searcher) envelope(dst int32, lo, hi path, depth int) []segment {
	only := []segment{{p: lo}}
	if sameLine(lo.l, hi.l) || lo.l.perByte <= hi.l.perByte || depth >= maxDepth {
		return only
	}
	// The lines cross at m; lo is the cheaper below it.
	m := (hi.l.fixed - lo.l.fixed) / (lo.l.perByte - hi.l.perByte)
	if m >= math.MaxInt64 || math.IsNaN(m) {
		return only
	}
	if m < 0 {
		m = 0
	}
	mid := s.path(s.tree(m), dst)
	at := lo.l.at(m)
	if mid.l.at(m) < at-1e-9*math.Max(at, 1) {
		left := s.envelope(dst, lo, mid, depth+1)
		right := s.envelope(dst, mid, hi, depth+1)
		return merge(left, right)
	}
	from := int64(math.Ceil(m))
	if from <= 0 {
		return []segment{{p: hi}}
	}
	return []segment{{p: lo}, {p: hi, from: from}}
}

// merge joins the envelope below a middle path and the one above it: the
// right part starts with the middle path, which left ends with.
func merge(left, right []segment) []segment {
	out := left
	for i, sg := range right {
		if i == 0 {
			continue // the middle path, already last in left
		}
		for len(out) > 0 && out[len(out)-1].from >= sg.from {
			out = out[:len(out)-1] // rounding left it empty
		}
		out = append(out, sg)
	}
	if len(out) == 0 {
		out = right[len(right)-1:]
	}
	out[0].from = 0
	return out
}

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
