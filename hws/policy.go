package hws

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Kind names a stealing policy.
type Kind uint8

const (
	// Random: an idle process asks a uniformly chosen other process and
	// waits for the answer.
	Random Kind = iota
	// CRS: cluster-aware random stealing (Satin). At most one
	// asynchronous request to a random process of another group is
	// outstanding per process; meanwhile it asks processes of its own group
	// synchronously.
	CRS
	// HWS: hierarchical work stealing. Tasks above the depth limit are
	// global and stay on the master's global stack; masters steal global
	// tasks from each other; everyone else steals only inside the group.
	HWS
)

var kindNames = [...]string{Random: "random", CRS: "crs", HWS: "hws"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Stack names one of a process's task stacks.
type Stack uint8

const (
	// Local is the process's ordinary stack (a deque: the owner takes
	// the newest task, thieves the oldest).
	Local Stack = iota
	// Global is a master's stack of global tasks (hws only): its owner
	// takes the newest, other masters steal the oldest.
	Global
)

func (s Stack) String() string {
	if s == Global {
		return "global"
	}
	return "local"
}

// Policy is a between-process stealing policy. The zero value is Random.
// Its methods are pure: they read the groups they are given and the
// random source, and change nothing.
type Policy struct {
	Kind Kind
	// DepthLimit is the hws depth limit: tasks created at a depth below
	// it (the root has depth 0) are global. Zero or negative: the default
	// for the group count (DefaultDepthLimit).
	DepthLimit int
}

// Policies lists the policy names Parse accepts.
var Policies = []string{"random", "crs", "hws"}

// Parse reads a policy name: "random", "crs", "hws", or "hws:L" for hws
// with depth limit L.
func Parse(s string) (Policy, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	for k, n := range kindNames {
		if !strings.EqualFold(name, n) {
			continue
		}
		p := Policy{Kind: Kind(k)}
		if hasArg {
			l, err := strconv.Atoi(arg)
			if Kind(k) != HWS || err != nil || l < 1 || l > 64 {
				return Policy{}, fmt.Errorf("hws: bad policy argument in %q (want hws:L, 1 <= L <= 64)", s)
			}
			p.DepthLimit = l
		}
		return p, nil
	}
	return Policy{}, fmt.Errorf("hws: unknown policy %q (want one of %s)", s, strings.Join(Policies, ", "))
}

func (p Policy) String() string {
	if p.Kind == HWS && p.DepthLimit > 0 {
		return "hws:" + strconv.Itoa(p.DepthLimit)
	}
	return p.Kind.String()
}

// DefaultDepthLimit is the hws depth limit used for g groups: none (every
// task local) for a single group, else ⌈log2 g⌉ + 7, which on a binary task
// tree makes about 128 blocks per group: enough for the masters to balance
// the groups (the last blocks, run inside one group each, are small) while
// few tasks ever cross a slow link. In the simulator (Fibonacci, 4 to 64
// groups of 2 to 16) fewer blocks left groups idle at the end, and more made
// the masters' splitting of global tasks the bottleneck. It is
// DepthLimitFor(g, 2).
func DefaultDepthLimit(groups int) int { return DepthLimitFor(groups, 2) }

// DepthLimitFor is the depth limit giving about 128 blocks per group on a
// task tree where every task creates fanout others: the least L with
// fanout^L >= 128·g (none for a single group).
func DepthLimitFor(groups, fanout int) int {
	if groups <= 1 {
		return 0
	}
	fanout = max(fanout, 2)
	l, n := 0, 1
	for n < 128*groups && l < 64 {
		n *= fanout
		l++
	}
	return l
}

// OverheadShare is the part of a run's work that DepthLimitForCost lets
// the moves of blocks cost: one twentieth.
const OverheadShare = 20

// DepthLimitForCost is the depth limit for g groups on a task tree where
// every task creates fanout others, whose work takes work on one processor,
// when moving one block (handing a global task down to a member, its
// result back) costs perTask: DepthLimitFor's limit, made shallower until
// the blocks' moves cost at most 1/OverheadShare of the work,
// fanout^L · perTask ≤ work/OverheadShare, so that each block's work is at
// least OverheadShare times what moving it costs. It stays deep enough for
// 16 blocks per group (fanout^L ≥ 16·g), so that the last block a group
// runs is a small part of its share, and at least 2. Without a cost or a
// work (zero or negative) it is DepthLimitFor's limit.
func DepthLimitForCost(groups, fanout int, work, perTask time.Duration) int {
	l := DepthLimitFor(groups, fanout)
	if l == 0 || work <= 0 || perTask <= 0 {
		return l
	}
	fanout = max(fanout, 2)
	lmin, n := 0, 1
	for (n < 16*groups || lmin < 2) && lmin < l {
		n *= fanout
		lmin++
	}
	budget := float64(work) / OverheadShare
	for l > lmin && math.Pow(float64(fanout), float64(l))*float64(perTask) > budget {
		l--
	}
	return l
}

// Limit is the depth limit in force with groups g (hws), or 0.
func (p Policy) Limit(g *Groups) int {
	if p.Kind != HWS {
		return 0
	}
	if p.DepthLimit > 0 {
		return p.DepthLimit
	}
	return DefaultDepthLimit(g.Len())
}

// Place returns the stack a task of the given depth goes on when proc
// creates it or receives it from a victim: under hws, tasks above the
// depth limit are global on a master; every other task is local. A global
// task a master hands down to a member thus becomes local work of the
// group, and so do the tasks it creates.
func (p Policy) Place(g *Groups, proc uint32, depth int) Stack {
	if p.Kind == HWS && depth < p.Limit(g) && g.IsMaster(proc) {
		return Global
	}
	return Local
}

var (
	orderLocal       = []Stack{Local}
	orderLocalGlobal = []Stack{Local, Global}
)

// Order returns the stacks proc takes its next task from, first to last,
// before it steals, each time its newest task: a hws master works on its
// local stack, then opens its newest global task. The slice is shared: do
// not modify it.
func (p Policy) Order(g *Groups, proc uint32) []Stack {
	if p.Kind != HWS || !g.IsMaster(proc) {
		return orderLocal
	}
	return orderLocalGlobal
}

// Thief is what Next needs to know about an idle process.
type Thief struct {
	Proc uint32
	// WideOutstanding is set while an asynchronous request to another
	// group is unanswered.
	WideOutstanding bool
}

// Steal is a steal request to issue.
type Steal struct {
	Victim uint32
	// Wide is set when the victim is in another group.
	Wide bool
	// Async is set when the thief does not wait for the answer: it sends
	// the request, marks it outstanding, and asks Next again for a
	// request inside its group.
	Async bool
	// From is the victim's stack the task is to come from.
	From Stack
}

// Next returns the request an idle process should send now, or false when
// there is no one to ask (a lone process, or one whose only possible
// request is already outstanding): it then waits for an answer or for work.
func (p Policy) Next(g *Groups, t Thief, r *rand.Rand) (Steal, bool) {
	gi, ok := g.Of(t.Proc)
	if !ok {
		return Steal{}, false
	}
	switch p.Kind {
	case Random:
		all := g.All()
		if len(all) < 2 {
			return Steal{}, false
		}
		i := r.IntN(len(all) - 1)
		if all[i] >= t.Proc { // skip self: all is sorted and holds t.Proc
			i++
		}
		v := all[i]
		return Steal{Victim: v, Wide: !g.Same(v, t.Proc)}, true
	case CRS:
		if !t.WideOutstanding && g.Len() > 1 {
			return Steal{Victim: remote(g, gi, r), Wide: true, Async: true}, true
		}
		return inGroup(g, gi, t.Proc, r)
	case HWS:
		if g.IsMaster(t.Proc) && !t.WideOutstanding && g.Len() > 1 {
			k := r.IntN(g.Len() - 1)
			if k >= gi {
				k++
			}
			return Steal{Victim: g.Master(k), Wide: true, Async: true, From: Global}, true
		}
		return inGroup(g, gi, t.Proc, r)
	}
	return Steal{}, false
}

// Take names where a victim takes the task it gives: a stack, and which
// end.
type Take struct {
	From Stack
	// Newest takes the task most recently pushed; otherwise the oldest.
	Newest bool
	// MinDepth, if positive, restricts the take to a task at least that
	// deep: the stack gives nothing when that task is shallower.
	MinDepth int
}

var (
	takeLocal  = []Take{{From: Local}}
	takeGlobal = []Take{{From: Global}}
)

// Serve returns where a victim looks, in order, for the task it gives for
// request s; none when the policy forbids the request. A thief is given
// the oldest task of the victim's local stack, the one with the most work
// under it. Under hws a task on a local stack never leaves its group; a
// master gives another master its oldest global task, and a member of its
// own group its oldest local task or, when it has none, its newest global
// task if that one is at the last global depth (its children are local:
// it becomes local work of the group; the larger global tasks stay for the
// other groups). The slice is shared: do not modify it.
func (p Policy) Serve(g *Groups, victim uint32, s Steal) []Take {
	switch {
	case p.Kind != HWS:
		return takeLocal
	case s.Wide:
		if s.From == Global && g.IsMaster(victim) {
			return takeGlobal
		}
		return nil
	case g.IsMaster(victim):
		if l := p.Limit(g); l > 0 {
			return []Take{{From: Local}, {From: Global, Newest: true, MinDepth: l - 1}}
		}
	}
	return takeLocal
}

// WorthMoving reports whether a task may be handed to a process of
// another group, weighing the time moving its data takes on the link
// between the groups (move: its input there and its result back) against
// the time its work takes on one processor (work; zero or negative:
// unknown). Under hws (the seed transfers a stolen task's data with it,
// and keeps small tasks from crossing between groups) a task whose data
// would take longer to cross than the thief's group, of pg processes,
// takes to run it stays in its group: move·pg > work. Every task may move
// under random and crs, and under hws when its work is unknown.
func (p Policy) WorthMoving(work, move time.Duration, pg int) bool {
	if p.Kind != HWS || work <= 0 {
		return true
	}
	return move*time.Duration(max(pg, 1)) <= work
}

// inGroup picks a uniformly random other process of group gi.
func inGroup(g *Groups, gi int, self uint32, r *rand.Rand) (Steal, bool) {
	m := g.Members(gi)
	if len(m) < 2 {
		return Steal{}, false
	}
	i := r.IntN(len(m) - 1)
	if m[i] >= self { // skip self: m is sorted and holds self
		i++
	}
	return Steal{Victim: m[i]}, true
}

// remote picks a uniformly random process outside group gi.
func remote(g *Groups, gi int, r *rand.Rand) uint32 {
	k := r.IntN(g.Procs() - len(g.Members(gi)))
	for i := range g.Len() {
		if i == gi {
			continue
		}
		m := g.Members(i)
		if k < len(m) {
			return m[k]
		}
		k -= len(m)
	}
	panic("unreachable")
}
