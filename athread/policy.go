package athread

import (
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/pcor-go/pcor/pcor"
)

// Policy decides the between-process part of the schedule: which threads
// a process offers to the others, which of them a given thief may take,
// and whom an idle process asks for work. The runtime does the rest
// (deques, stealing between VPs, packing, moving results back). A Policy
// is called from several goroutines at once and must not block.
//
// Inside a process, threads always go to the creating VP's deque unless
// Classify says Global; a Global thread is packed and put in the process's
// offer pool, ordered by depth, then cost (highest first), then packed
// size. The process's own VPs take from the pool too, and a thread still
// in it when its creator joins is run by the creator.
type Policy interface {
	// Classify is called for each thread of a registered function created
	// in a job of several processes with Place Anywhere. ClassLocal keeps it in
	// the process.
	Classify(t TaskInfo) Class
	// Allow reports whether the offered thread t may be handed to thief
	// (for example: global threads to any master, group-local threads
	// only to members of this process's group).
	Allow(thief pcor.ProcID, t TaskInfo) bool
	// Victim chooses the process an idle process asks for work: q.Attempt
	// counts the requests since the process last received work. ok false
	// means ask no one now (the runtime backs off and asks again while it
	// is idle).
	Victim(q StealQuery) (victim pcor.ProcID, ok bool)
	// Forward is asked when this process has nothing to give a thief: ok
	// true passes the request on to next, which answers the thief itself
	// (a master asking other masters, for example). q.Hops counts the
	// forwards so far.
	Forward(q StealQuery) (next pcor.ProcID, ok bool)
}

// Class is a policy's classification of a thread.
type Class uint8

const (
	// Local threads stay in the process that created them.
	ClassLocal Class = iota
	// Global threads are offered to other processes. Policies may define
	// further classes above ClassGlobal (group-local threads, for example) and
	// interpret them in Allow.
	ClassGlobal
)

// TaskInfo describes a thread to a policy.
type TaskInfo struct {
	Func  string      // registered name
	Depth int         // 0 for threads created outside any thread
	Cost  int64       // the Attr.Cost hint
	Size  int         // bytes of packed input (-1 when not packed yet)
	Class Class       // the class Classify gave (in Allow)
	Owner pcor.ProcID // the process whose Join waits for the result
}

// StealQuery is what a policy knows when choosing a victim or forwarding.
type StealQuery struct {
	Self    pcor.ProcID   // the process deciding
	Thief   pcor.ProcID   // the idle process (Self for Victim)
	Procs   []pcor.ProcID // the live processes of the job, Self included, sorted
	Attempt int           // requests since the thief last received work
	Hops    int           // times the request was forwarded (Forward)
	Last    pcor.ProcID   // the previous victim (when Attempt > 0)
	// Outstanding is set while an asynchronous request of the thief
	// (AsyncPolicy) is unanswered.
	Outstanding bool
	// Held are the processes that answered the thief's last request to
	// them with no work and still hold it as hungry: each hands it the
	// next thread it offers unasked, so asking them again finds nothing
	// (Victim; sorted).
	Held []pcor.ProcID
}

// AsyncPolicy is a Policy some of whose requests are asynchronous, as the
// wide-area requests of Satin's cluster-aware random stealing: the thief
// sends such a request without waiting for its answer and goes on asking
// (Victim is called again at once, with StealQuery.Outstanding set); at
// most one is outstanding per process. The answer, a thread or nothing,
// comes back as for any request.
type AsyncPolicy interface {
	Policy
	// Async reports whether the request to victim that Victim chose for
	// q is to be sent asynchronously.
	Async(q StealQuery, victim pcor.ProcID) bool
}

// DepthFirstPolicy is a Policy under which a process's own VPs, when they
// have nothing else to run, take the thread offered last (depth first, as
// the owner of a work-stealing deque does) rather than the shallowest: the
// oldest offered threads, those with the most work under them, stay for
// the other processes, as on an hws master's global stack. Without it a
// process's VPs take the shallowest offered thread, as another process
// would.
type DepthFirstPolicy interface {
	Policy
	// DepthFirst reports whether the process's VPs take the thread
	// offered last.
	DepthFirst() bool
}

// Random is the default policy: every thread of a registered function not
// deeper than MaxDepth is offered to other processes; any process may take
// any offered thread; an idle process asks a process chosen at random
// among the others that do not hold it as hungry already (among all the
// others when they all do); requests are not forwarded.
type Random struct {
	// MaxDepth is the deepest thread offered (default 8 when zero; -1
	// offers none).
	MaxDepth int

	mu  sync.Mutex
	rng *rand.Rand
}

// Classify implements Policy.
func (p *Random) Classify(t TaskInfo) Class {
	max := p.MaxDepth
	if max == 0 {
		max = 8
	}
	if t.Depth <= max {
		return ClassGlobal
	}
	return ClassLocal
}

// Allow implements Policy.
func (p *Random) Allow(thief pcor.ProcID, t TaskInfo) bool { return true }

// Victim implements Policy.
func (p *Random) Victim(q StealQuery) (pcor.ProcID, bool) {
	others := 0
	for _, pr := range q.Procs {
		if pr != q.Self && !slices.Contains(q.Held, pr) {
			others++
		}
	}
	held := q.Held
	if others == 0 {
		held = nil // all hold it: any of them
		others = len(q.Procs) - 1
	}
	if others < 1 {
		return 0, false
	}
	p.mu.Lock()
	if p.rng == nil {
		p.rng = rand.New(rand.NewPCG(uint64(q.Self)+1, 0x5eed))
	}
	i := p.rng.IntN(others)
	p.mu.Unlock()
	for _, pr := range q.Procs {
		if pr == q.Self || slices.Contains(held, pr) {
			continue
		}
		if i == 0 {
			return pr, true
		}
		i--
	}
	return 0, false
}

// Forward implements Policy.
func (p *Random) Forward(q StealQuery) (pcor.ProcID, bool) { return 0, false }
