// Package adapt drives athread's between-process scheduling with the
// stealing policies of package hws: it implements athread.Policy on top of
// hws.Policy and the current groups, and counts the steals it decides
// inside and between groups.
//
// Under crs the request to another group is asynchronous, as in Satin:
// athread sends it without waiting (Policy implements athread.AsyncPolicy)
// and meanwhile asks inside the group, one request at a time; at most one
// is outstanding. An hws master asks the other members of its group k
// times (k of them), then another master once, and so on; the request to
// the other master is asynchronous too: while it is unanswered the master
// asks only inside its group. An hws master opens its newest
// global thread first (Policy implements athread.DepthFirstPolicy), leaving
// the oldest, the largest, for the other masters.
//
// Thread classes: under hws, the threads the program's main thread creates
// (depth 1) stay in their process, as the seed's run starts with one master
// executing the root; threads created above the depth limit by a
// master are athread.ClassGlobal (handed only to other masters, or, at the
// last global depth, to members of the master's group); the others, down
// to MaxDepth or half of it below the limit, whichever is deeper, are
// ClassGroup (handed only inside the group); deeper ones stay in their
// process. Under random and crs every
// thread down to MaxDepth is ClassGlobal and anyone may take it.
//
// Data against work: once told how fast a CPU gets through the threads'
// cost hints and the routes of its process (Policy.Weigh), an hws master
// hands a global thread to another group only if its packed input, and a
// result as large, take no longer to cross the route to the thief (beyond
// the route's fixed cost, which the request and its answer pay anyway)
// than the thief's group takes to run the thread
// (hws.Policy.WorthMoving); otherwise the thread stays for its own group.
// Threads without a cost hint move as before.
package adapt

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/hws"
	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/routing"
)

// ClassGroup marks a thread that may go to processes of its group only.
const ClassGroup = athread.ClassGlobal + 1

// DefaultMaxDepth is the deepest thread offered to other processes under
// random and crs, as athread.Random's default.
const DefaultMaxDepth = 8

// requestBytes is the size of a steal request's payload.
const requestBytes = 10

// Policy is an athread.Policy following an hws.Policy. Its methods may be
// called concurrently.
type Policy struct {
	pol      hws.Policy
	self     pcor.ProcID
	maxDepth int
	groups   atomic.Pointer[hws.Groups]
	weights  atomic.Pointer[weights]

	mu         sync.Mutex
	rng        *rand.Rand
	sinceWide  int   // requests inside the group since the last one outside
	wideDepths []int // depths of the threads handed to other groups

	localAttempts, wideAttempts atomic.Uint64
	localGiven, wideGiven       atomic.Uint64
	localBytes, wideBytes       atomic.Uint64
	wideKept                    atomic.Uint64
}

// weights is what Weigh was given.
type weights struct {
	rate   float64 // cost-hint units per second of one CPU
	routes func() *routing.Table
}

var (
	_ athread.AsyncPolicy      = (*Policy)(nil)
	_ athread.DepthFirstPolicy = (*Policy)(nil)
)

// New returns the policy of process self with the given groups. maxDepth
// is the deepest thread offered under random and crs, and under hws the
// deeper of it and the depth limit plus half of it (0: DefaultMaxDepth).
func New(p hws.Policy, self pcor.ProcID, g *hws.Groups, maxDepth int) *Policy {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	a := &Policy{pol: p, self: self, maxDepth: maxDepth,
		rng: rand.New(rand.NewPCG(uint64(self)+1, 0x687773))}
	a.groups.Store(g)
	return a
}

// Deepest is the depth of the deepest thread policy p lets leave its
// process with groups g and maxDepth as given to New: maxDepth under random
// and crs, and under hws the deeper of it and the depth limit plus half of
// it. A comparison of policies that gives random and crs Deepest of hws as
// their maxDepth lets every policy move the same threads.
func Deepest(p hws.Policy, g *hws.Groups, maxDepth int) int {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if p.Kind != hws.HWS {
		return maxDepth
	}
	return max(maxDepth, p.Limit(g)+maxDepth/2)
}

// SetGroups replaces the groups (after a membership change; see
// hws.Tracker).
func (a *Policy) SetGroups(g *hws.Groups) { a.groups.Store(g) }

// Weigh makes the policy weigh a global thread's data against its work
// before handing it to another group (hws only): rate is how many units of
// the threads' cost hints (athread.Attr.Cost) one CPU gets through in a
// second, and routes returns the process's current routing table
// (pcor.Node.Routes), whose route to the thief prices the move. A rate of
// zero or a nil routes turns the weighing off.
func (a *Policy) Weigh(rate float64, routes func() *routing.Table) {
	if !(rate > 0) || routes == nil {
		a.weights.Store(nil)
		return
	}
	a.weights.Store(&weights{rate: rate, routes: routes})
}

// worthMoving reports whether thread t may go to thief, a process of
// another group of g, by the weights given to Weigh: the time its input
// of t.Size bytes and a result as large take to cross, beyond the route's
// fixed cost, against its cost hint's time on the thief group's processes.
// Without weights, a cost hint, a packed input or a route to the thief, it
// may.
func (a *Policy) worthMoving(g *hws.Groups, thief pcor.ProcID, t athread.TaskInfo) bool {
	w := a.weights.Load()
	if w == nil || t.Cost <= 0 || t.Size < 0 {
		return true
	}
	tab := w.routes()
	if tab == nil {
		return true
	}
	r, ok := tab.Lookup(uint32(thief), int64(t.Size))
	if !ok {
		return true
	}
	pg := 1
	if gi, ok := g.Of(uint32(thief)); ok {
		pg = len(g.Members(gi))
	}
	work := time.Duration(min(float64(t.Cost)/w.rate*1e9, float64(1<<62)))
	// The bytes' part of the route's cost: the request and its answer
	// cross the link whether or not the answer carries a thread.
	move := 2 * (r.Cost(int64(t.Size)) - r.Cost(0))
	return a.pol.WorthMoving(work, move, pg)
}

// Groups returns the groups in force.
func (a *Policy) Groups() *hws.Groups { return a.groups.Load() }

// Classify implements athread.Policy.
func (a *Policy) Classify(t athread.TaskInfo) athread.Class {
	g := a.groups.Load()
	if a.pol.Kind != hws.HWS {
		if t.Depth <= a.maxDepth {
			return athread.ClassGlobal
		}
		return athread.ClassLocal
	}
	switch {
	case t.Depth <= 1 && g.Len() > 1:
		// The program's first threads start where it runs (the seed's
		// run starts with one master executing the root depth first):
		// handed to another group before their creator joins them, they
		// would cross the slow link only for their work to cross back.
		return athread.ClassLocal
	case t.Depth > Deepest(a.pol, g, a.maxDepth):
		return athread.ClassLocal
	case a.pol.Place(g, uint32(a.self), t.Depth) == hws.Global:
		return athread.ClassGlobal
	}
	return ClassGroup
}

// Allow implements athread.Policy: it is asked on the victim's side, and
// counts what it hands over.
func (a *Policy) Allow(thief pcor.ProcID, t athread.TaskInfo) bool {
	g := a.groups.Load()
	same := g.Same(uint32(a.self), uint32(thief))
	ok := true
	if a.pol.Kind == hws.HWS {
		switch t.Class {
		case athread.ClassGlobal:
			if same {
				ok = t.Depth >= a.pol.Limit(g)-1 // hand the deepest global threads down
			} else if ok = g.IsMaster(uint32(thief)); ok && !a.worthMoving(g, thief, t) {
				ok = false
				a.wideKept.Add(1)
			}
		default:
			ok = same
		}
	}
	if ok {
		size := uint64(max(t.Size, 0))
		if same {
			a.localGiven.Add(1)
			a.localBytes.Add(size)
		} else {
			a.wideGiven.Add(1)
			a.wideBytes.Add(size)
			a.mu.Lock()
			a.wideDepths = append(a.wideDepths, t.Depth)
			a.mu.Unlock()
		}
	}
	return ok
}

// Victim implements athread.Policy. The groups are first restricted to
// the live processes athread names, so that a group whose master died
// gets its next process as master (and other masters stop asking the dead
// one).
func (a *Policy) Victim(q athread.StealQuery) (pcor.ProcID, bool) {
	g := a.live(q.Procs)
	gi, known := g.Of(uint32(q.Self))
	if !known { // groups not known yet
		return 0, false
	}
	if a.pol.Kind == hws.CRS {
		a.mu.Lock()
		s, ok := a.pol.Next(g, hws.Thief{Proc: uint32(q.Self), WideOutstanding: q.Outstanding}, a.rng)
		a.mu.Unlock()
		return a.count(s, ok)
	}
	a.mu.Lock()
	others := len(g.Members(gi)) - 1
	wideDue := a.sinceWide >= max(others, 1) && !q.Outstanding
	s, ok := a.pol.Next(g, hws.Thief{Proc: uint32(q.Self), WideOutstanding: !wideDue}, a.rng)
	if ok && s.Wide {
		a.sinceWide = 0
	} else if ok {
		a.sinceWide++
	} else if !wideDue && !q.Outstanding {
		// nothing inside the group (a lone process): ask outside now
		a.sinceWide = max(others, 1)
		s, ok = a.pol.Next(g, hws.Thief{Proc: uint32(q.Self)}, a.rng)
		if ok && s.Wide {
			a.sinceWide = 0
		}
	}
	a.mu.Unlock()
	return a.count(s, ok)
}

// count counts the request Victim chose.
func (a *Policy) count(s hws.Steal, ok bool) (pcor.ProcID, bool) {
	if !ok {
		return 0, false
	}
	if s.Wide {
		a.wideAttempts.Add(1)
		a.wideBytes.Add(requestBytes)
	} else {
		a.localAttempts.Add(1)
		a.localBytes.Add(requestBytes)
	}
	return pcor.ProcID(s.Victim), true
}

// DepthFirst implements athread.DepthFirstPolicy: under hws a master
// opens its newest global thread when it has nothing else to run (as
// hws.Policy.Order says), so that the oldest, those with the most work under
// them, stay on its global stack for the other masters.
func (a *Policy) DepthFirst() bool { return a.pol.Kind == hws.HWS }

// Async implements athread.AsyncPolicy: under crs and hws a request to
// another group is asynchronous.
func (a *Policy) Async(q athread.StealQuery, victim pcor.ProcID) bool {
	return a.pol.Kind != hws.Random && !a.groups.Load().Same(uint32(q.Self), uint32(victim))
}

// live restricts the groups to the live processes, keeping the result.
func (a *Policy) live(procs []pcor.ProcID) *hws.Groups {
	g := a.groups.Load()
	if len(procs) == 0 || len(procs) == g.Procs() {
		return g
	}
	ids := make([]uint32, len(procs))
	for i, p := range procs {
		ids[i] = uint32(p)
	}
	if h := g.Only(ids); h != g {
		a.groups.CompareAndSwap(g, h)
		return h
	}
	return g
}

// Forward implements athread.Policy: requests are not passed on.
func (a *Policy) Forward(q athread.StealQuery) (pcor.ProcID, bool) { return 0, false }

// Counters returns what this process counted: the requests it sent, the
// threads it handed over (steals that succeeded, counted by the victim),
// and the bytes of both (request payloads and packed thread inputs).
func (a *Policy) Counters() hws.Counters {
	a.mu.Lock()
	depths := slices.Clone(a.wideDepths)
	a.mu.Unlock()
	return hws.Counters{
		WideDepths:    depths,
		Policy:        a.pol.String(),
		LocalAttempts: a.localAttempts.Load(),
		LocalSteals:   a.localGiven.Load(),
		WideAttempts:  a.wideAttempts.Load(),
		WideSteals:    a.wideGiven.Load(),
		LocalBytes:    a.localBytes.Load(),
		WideBytes:     a.wideBytes.Load(),
		WideKept:      a.wideKept.Load(),
	}
}
