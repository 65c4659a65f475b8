package hws

import (
	"fmt"
	"slices"
	"strings"
)

// Groups is a partition of the processes of an application into groups,
// with one master per group. A Groups is never modified once made: a
// membership change makes a new one (Without, Discover, Explicit), so it may
// be shared by goroutines without locking. The zero value has no groups.
type Groups struct {
	members [][]uint32 // per group, increasing process ids
	all     []uint32   // every process, increasing
	of      map[uint32]int
}

// NewGroups makes the groups from lists of process ids. Empty lists are
// dropped; the lists are sorted; groups are numbered by their lowest
// process id. A process listed twice is an error.
func NewGroups(lists [][]uint32) (*Groups, error) {
	g := &Groups{of: make(map[uint32]int)}
	for _, l := range lists {
		if len(l) == 0 {
			continue
		}
		m := slices.Clone(l)
		slices.Sort(m)
		for i, p := range m {
			if i > 0 && m[i-1] == p {
				return nil, fmt.Errorf("hws: process %d listed twice in one group", p)
			}
		}
		g.members = append(g.members, m)
	}
	slices.SortFunc(g.members, func(a, b []uint32) int { return int(int64(a[0]) - int64(b[0])) })
	for i, m := range g.members {
		for _, p := range m {
			if j, dup := g.of[p]; dup {
				return nil, fmt.Errorf("hws: process %d is in groups %d and %d", p, j, i)
			}
			g.of[p] = i
			g.all = append(g.all, p)
		}
	}
	slices.Sort(g.all)
	return g, nil
}

// Uniform makes n groups of size processes each: group i holds processes
// i·size to i·size+size-1.
func Uniform(n, size int) *Groups {
	lists := make([][]uint32, n)
	for i := range lists {
		for j := range size {
			lists[i] = append(lists[i], uint32(i*size+j))
		}
	}
	g, _ := NewGroups(lists)
	return g
}

// Len is the number of groups.
func (g *Groups) Len() int {
	if g == nil {
		return 0
	}
	return len(g.members)
}

// Procs is the number of processes in all groups.
func (g *Groups) Procs() int {
	if g == nil {
		return 0
	}
	return len(g.of)
}

// Members returns the processes of group i in increasing order. The slice
// is shared: do not modify it.
func (g *Groups) Members(i int) []uint32 { return g.members[i] }

// All returns every process in increasing order. The slice is shared: do
// not modify it.
func (g *Groups) All() []uint32 {
	if g == nil {
		return nil
	}
	return g.all
}

// Of returns the group of proc.
func (g *Groups) Of(proc uint32) (int, bool) {
	if g == nil {
		return 0, false
	}
	i, ok := g.of[proc]
	return i, ok
}

// Master returns the master of group i: its lowest process id.
func (g *Groups) Master(i int) uint32 { return g.members[i][0] }

// Masters returns the master of every group, by group.
func (g *Groups) Masters() []uint32 {
	m := make([]uint32, g.Len())
	for i := range m {
		m[i] = g.Master(i)
	}
	return m
}

// IsMaster reports whether proc is the master of its group.
func (g *Groups) IsMaster(proc uint32) bool {
	i, ok := g.Of(proc)
	return ok && g.members[i][0] == proc
}

// MasterOf returns the master of proc's group.
func (g *Groups) MasterOf(proc uint32) (uint32, bool) {
	i, ok := g.Of(proc)
	if !ok {
		return 0, false
	}
	return g.members[i][0], true
}

// Same reports whether a and b are in one group.
func (g *Groups) Same(a, b uint32) bool {
	i, ok1 := g.Of(a)
	j, ok2 := g.Of(b)
	return ok1 && ok2 && i == j
}

// Without returns the groups with proc removed (a process that died or
// left). If proc was a master, the next lowest process id of its group is
// the new master; a group left empty disappears and the groups after it
// are renumbered. Without returns g itself when proc is not a member.
func (g *Groups) Without(proc uint32) *Groups {
	if _, ok := g.Of(proc); !ok {
		return g
	}
	lists := make([][]uint32, 0, len(g.members))
	for _, m := range g.members {
		lists = append(lists, slices.DeleteFunc(slices.Clone(m), func(p uint32) bool { return p == proc }))
	}
	n, _ := NewGroups(lists)
	return n
}

// Only returns the groups restricted to the given processes (the live
// ones, for instance): the others are removed as by Without, masters
// re-elected. It returns g itself when every member is listed.
func (g *Groups) Only(procs []uint32) *Groups {
	keep := make(map[uint32]bool, len(procs))
	for _, p := range procs {
		keep[p] = true
	}
	all := true
	for _, p := range g.All() {
		all = all && keep[p]
	}
	if all {
		return g
	}
	lists := make([][]uint32, 0, g.Len())
	for _, m := range g.members {
		lists = append(lists, slices.DeleteFunc(slices.Clone(m), func(p uint32) bool { return !keep[p] }))
	}
	n, _ := NewGroups(lists)
	return n
}

// Lists returns a copy of the groups' process lists.
func (g *Groups) Lists() [][]uint32 {
	l := make([][]uint32, g.Len())
	for i := range l {
		l[i] = slices.Clone(g.members[i])
	}
	return l
}

// String formats the groups as ParseGroups reads them, with ranges: "0-3;4-7".
func (g *Groups) String() string {
	var b strings.Builder
	for i := range g.Len() {
		if i > 0 {
			b.WriteByte(';')
		}
		m := g.members[i]
		for j := 0; j < len(m); {
			k := j
			for k+1 < len(m) && m[k+1] == m[k]+1 {
				k++
			}
			if j > 0 {
				b.WriteByte(',')
			}
			if k > j {
				fmt.Fprintf(&b, "%d-%d", m[j], m[k])
			} else {
				fmt.Fprintf(&b, "%d", m[j])
			}
			j = k + 1
		}
	}
	return b.String()
}
