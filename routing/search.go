package routing

import (
	"container/heap"
	"math"
	"slices"
)

// label is the cost of a path so far: its fixed cost, per-byte cost and
// number of process-to-process hops.
type label struct {
	fixed, perByte float64
	hops           int32
}

// at is the cost of the path for a message of m bytes; m = +Inf ranks by
// per-byte cost first.
func (l label) at(m float64) float64 {
	if math.IsInf(m, 1) {
		return l.perByte
	}
	return l.fixed + l.perByte*m
}

// better reports whether l ranks before o for messages of m bytes: lower
// cost, then (ties) the lower per-byte cost (or, at m = ∞, fixed cost),
// then fewer hops.
func (l label) better(o label, m float64) bool {
	if a, b := l.at(m), o.at(m); a != b {
		return a < b
	}
	if math.IsInf(m, 1) {
		if l.fixed != o.fixed {
			return l.fixed < o.fixed
		}
	} else if l.perByte != o.perByte {
		return l.perByte < o.perByte
	}
	return l.hops < o.hops
}

// tree is a shortest-path tree from the local process for one size.
type tree struct {
	m     float64
	label []label
	pred  []int32 // node before each node on its path; -1 at the root
	port  []int32 // port index of the edge into each node
	done  []bool
}

type qItem struct {
	node int32
	l    label
}

type queue struct {
	items []qItem
	m     float64
}

func (q *queue) Len() int { return len(q.items) }
func (q *queue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if a.l.better(b.l, q.m) {
		return true
	}
	if b.l.better(a.l, q.m) {
		return false
	}
	return a.node < b.node
}
func (q *queue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *queue) Push(x any)    { q.items = append(q.items, x.(qItem)) }
func (q *queue) Pop() any {
	it := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return it
}

// thresholds returns the distinct per-byte costs of the edges, in
// increasing order: the bottlenecks a path can have.
func (g *graph) thresholds() []float64 {
	var bs []float64
	for _, es := range g.adj {
		for _, e := range es {
			bs = append(bs, e.perByte)
		}
	}
	slices.Sort(bs)
	return slices.Compact(bs)
}

// shortest runs Dijkstra's algorithm from the local process over the edges
// whose per-byte cost is at most limit, by fixed cost (ties: lower
// bottleneck, then fewer hops). A path's per-byte cost is its largest
// edge's: a gateway forwards fragment by fragment, so a message streams
// at the pace of the slowest link. Costs are non-negative except on the
// edges leaving the root (a local link's large-message regime, whose line
// can start below zero), and every path starts with exactly one of those,
// so it is exact.
func (g *graph) shortest(limit float64) *tree {
	n := len(g.adj)
	t := &tree{m: limit, label: make([]label, n), pred: make([]int32, n), port: make([]int32, n), done: make([]bool, n)}
	reached := make([]bool, n)
	for i := range t.pred {
		t.pred[i], t.port[i] = -1, -1
	}
	if g.self < 0 {
		return t
	}
	q := &queue{m: 0}
	reached[g.self] = true
	heap.Push(q, qItem{g.self, label{}})
	for q.Len() > 0 {
		it := heap.Pop(q).(qItem)
		u := it.node
		if t.done[u] {
			continue
		}
		t.done[u] = true
		for _, e := range g.adj[u] {
			if t.done[e.to] || e.perByte > limit {
				continue
			}
			l := t.label[u]
			l.fixed += e.fixed
			l.perByte = max(l.perByte, e.perByte)
			if g.isProc(u) && u != g.self {
				l.fixed += g.forward // u forwards
			}
			if g.isProc(e.to) {
				l.hops++
			}
			if !reached[e.to] || l.better(t.label[e.to], 0) {
				reached[e.to] = true
				t.label[e.to] = l
				t.pred[e.to] = u
				t.port[e.to] = e.port
				heap.Push(q, qItem{e.to, l})
			}
		}
	}
	return t
}
