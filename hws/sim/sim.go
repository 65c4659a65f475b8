// Package sim runs the stealing policies of package hws in virtual time on
// platforms this machine cannot host: g groups of p_g processes (up to
// thousands), links inside a group and between groups with their own
// latency and bandwidth, and synthetic fork/join task trees (Fibonacci,
// balanced and unbalanced trees, n-queens, blocked matrix product).
//
// The simulator is a single event queue: no goroutine per simulated
// process. Every decision (where a new task goes, which stack to take work
// from, whom to ask, what a victim gives) is made by the same hws.Policy
// code a runtime uses. A run is deterministic for a given seed.
//
// # Model
//
// A process runs one task at a time. A task runs its Pre work, pushes its
// children (on the stack hws.Policy.Place names), and waits for them; the
// process meanwhile runs other work. A task whose children are all done is
// resumed, on the process where it started, before anything else, and runs
// its Post work. An idle process takes the newest task of its own stacks,
// in the order hws.Policy.Order gives, else steals: it sends the requests
// hws.Policy.Next gives (at most one synchronous request unanswered, and
// one asynchronous request to another group), and the victim answers with
// the task hws.Policy.Serve designates (with the task's argument bytes) or
// with nothing (under hws also when moving the task's argument and result
// to another group takes longer than its subtree's work takes a group:
// hws.Policy.WorthMoving); a stolen task goes on the stack hws.Policy.Place names. A
// task that ends on another process than its parent's sends its result
// there. Steal requests are answered on arrival, without interrupting the
// victim's work.
//
// A message inside a group takes LocalLatency plus its size over
// LocalBandwidth. A message between groups goes through its group's
// uplink, one message at a time at WideBandwidth, then takes WideLatency:
// the slow link is shared by the processes of a group. A stolen task
// reaches its thief Platform.TaskOverhead later still.
package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pcor-go/pcor/hws"
)

// Platform describes the simulated machines and network.
type Platform struct {
	Groups, PerGroup int
	// LocalLatency and LocalBandwidth (bytes per second) are a message's
	// cost inside a group.
	LocalLatency   time.Duration
	LocalBandwidth float64
	// WideLatency and WideBandwidth are a message's cost between groups;
	// the bandwidth is that of each group's uplink, shared by its
	// processes.
	WideLatency   time.Duration
	WideBandwidth float64
	// Unit is the time of one unit of work.
	Unit time.Duration
	// Header is the size in bytes of a steal request, of an empty answer,
	// and of the header added to a task or a result.
	Header int
	// TaskOverhead is what moving one task to another process costs
	// beyond its messages' latency and bytes (a runtime's handling of the
	// steal and of the result on both sides): a stolen task reaches its
	// thief that much later. hws.DepthLimitForCost weighs it against the
	// work (zero: nothing).
	TaskOverhead time.Duration
}

// DefaultPlatform is a grid of g clusters of pg processes: 20 µs and
// 1 GB/s inside a cluster, 2 ms and 12.5 MB/s (100 Mbit/s) per cluster
// uplink between clusters, 1 µs units of work, 64-byte headers.
func DefaultPlatform(g, pg int) Platform {
	return Platform{
		Groups: g, PerGroup: pg,
		LocalLatency: 20 * time.Microsecond, LocalBandwidth: 1e9,
		WideLatency: 2 * time.Millisecond, WideBandwidth: 12.5e6,
		Unit: time.Microsecond, Header: 64,
	}
}

// MaxProcs bounds the simulated processes.
const MaxProcs = 1 << 16

// Config is one simulation.
type Config struct {
	Platform Platform
	Policy   hws.Policy
	DAG      *DAG
	Seed     uint64
	// MaxEvents stops a run that would never end (0: 1<<31).
	MaxEvents int
}

// Result is what a run measured, beside what the theory predicts.
type Result struct {
	hws.Counters
	Groups, PerGroup int
	// Work and Span are W and D in units; Limit is the depth limit of the
	// bound (the policy's, or the hws default for the group count), Blocks
	// the number of blocks below it and MaxBlock the largest block's work.
	Work, Span    int64
	Limit, Blocks int
	MaxBlock      int64
	// Bound is Théorème 1's inter-group steal count without its constant,
	// g·(D + max_i W_i/p_g), counted in steps of one steal between groups:
	// the round trip of an empty request and answer between groups
	// (2·WideLatency + 2·Header bytes at WideBandwidth). W_i is the block's
	// time in steps; D is the critical path with every task costing at
	// least one step (DAG.SpanSteps).
	Bound float64
	// WideThieves is the number of processes that sent a steal request
	// to another group.
	WideThieves int
	// Ideal is (W/p + D)·Unit, the classical makespan bound.
	Ideal time.Duration
	// Tasks is the number of tasks run (every task of the DAG once).
	Tasks int
	// Events is the number of events processed.
	Events int
}

// ErrTooLong is returned when a run exceeds its event budget.
var ErrTooLong = errors.New("sim: event budget exhausted")

type proc struct {
	group   int32
	local   deque
	global  deque
	resume  []int32
	running bool
	syncOut bool // a synchronous steal request is unanswered
	wideOut bool // an asynchronous steal request to another group is unanswered
	busy    int64
	wideAsk bool // sent a request to another group at least once
}

func (p *proc) stack(s hws.Stack) *deque {
	if s == hws.Global {
		return &p.global
	}
	return &p.local
}

type sim struct {
	cfg    Config
	pl     Platform
	pol    hws.Policy
	g      *hws.Groups
	d      *DAG
	r      *rand.Rand
	q      queue
	now    int64
	procs  []proc
	uplink []int64 // per group: time its uplink is free
	owner  []int32 // per task: process that started it
	wait   []int32 // per task: children not done
	work   []int64 // per task: its subtree's work, in units
	res    Result
	done   bool
}

// Run simulates one execution.
func Run(cfg Config) (Result, error) {
	pl := cfg.Platform
	p := pl.Groups * pl.PerGroup
	switch {
	case pl.Groups < 1 || pl.PerGroup < 1 || p > MaxProcs:
		return Result{}, fmt.Errorf("sim: %d groups of %d processes (want 1 to %d processes)", pl.Groups, pl.PerGroup, MaxProcs)
	case pl.Unit <= 0 || pl.TaskOverhead < 0 || pl.LocalLatency < 0 || pl.WideLatency < 0 || !(pl.LocalBandwidth > 0) || !(pl.WideBandwidth > 0) || pl.Header < 0:
		return Result{}, fmt.Errorf("sim: bad platform %+v", pl)
	case cfg.DAG == nil || cfg.DAG.Len() == 0:
		return Result{}, errors.New("sim: no DAG")
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = 1 << 31
	}
	s := &sim{
		cfg: cfg, pl: pl, pol: cfg.Policy, d: cfg.DAG,
		g:      hws.Uniform(pl.Groups, pl.PerGroup),
		r:      rand.New(rand.NewPCG(cfg.Seed, 0x687773)),
		procs:  make([]proc, p),
		uplink: make([]int64, pl.Groups),
		owner:  make([]int32, cfg.DAG.Len()),
		wait:   make([]int32, cfg.DAG.Len()),
	}
	for i := range s.procs {
		s.procs[i].group = int32(i / pl.PerGroup)
	}
	s.work, _ = s.d.subtree()
	s.theory()
	s.res.Policy = cfg.Policy.String()
	s.start(0, 0)
	for i := 1; i < p; i++ {
		s.q.push(event{kind: evWake, p: int32(i)})
	}
	for s.q.len() > 0 && !s.done {
		if s.res.Events++; s.res.Events > cfg.MaxEvents {
			return s.res, ErrTooLong
		}
		e := s.q.pop()
		s.now = e.t
		s.handle(e)
	}
	if !s.done {
		return s.res, errors.New("sim: the run stopped before the root task ended")
	}
	s.res.Makespan = time.Duration(s.now)
	s.res.Idle = make([]time.Duration, p)
	for i := range s.procs {
		s.res.Idle[i] = time.Duration(s.now - s.procs[i].busy)
	}
	return s.res, nil
}

// theory fills the DAG's figures and the bounds.
func (s *sim) theory() {
	r := &s.res
	r.Groups, r.PerGroup = s.pl.Groups, s.pl.PerGroup
	r.Work, r.Span = s.d.Work(), s.d.Span()
	r.Limit = s.pol.Limit(s.g)
	if s.pol.Kind != hws.HWS {
		// The bound of random and crs runs is the one for the depth
		// limit the policy carries (to compare with an hws run), else the
		// hws default.
		r.Limit = s.pol.DepthLimit
		if r.Limit <= 0 {
			r.Limit = hws.DefaultDepthLimit(s.pl.Groups)
		}
	}
	r.Blocks, r.MaxBlock = s.d.Blocks(r.Limit)
	step := 2*float64(s.pl.WideLatency) + 2*float64(s.pl.Header)/s.pl.WideBandwidth*1e9
	perStep := max(step, 1) / float64(s.pl.Unit) // units of work in a step
	r.Bound = hws.Bound(s.pl.Groups, s.pl.PerGroup, s.d.SpanSteps(perStep), float64(r.MaxBlock)/perStep)
	p := int64(len(s.procs))
	r.Ideal = time.Duration(r.Work/p+r.Span) * s.pl.Unit
}

func (s *sim) units(u int32) int64 { return int64(u) * int64(s.pl.Unit) }

// send returns when a message of size bytes from a reaches b, and counts it.
func (s *sim) send(a, b int32, size int) int64 {
	ga, gb := s.procs[a].group, s.procs[b].group
	if ga == gb {
		s.res.LocalBytes += uint64(size)
		return s.now + int64(s.pl.LocalLatency) + int64(float64(size)/s.pl.LocalBandwidth*1e9)
	}
	s.res.WideBytes += uint64(size)
	start := max(s.now, s.uplink[ga])
	end := start + int64(float64(size)/s.pl.WideBandwidth*1e9)
	s.uplink[ga] = end
	return end + int64(s.pl.WideLatency)
}

// start runs task n on process p from now.
func (s *sim) start(p, n int32) {
	pr := &s.procs[p]
	pr.running = true
	s.owner[n] = p
	s.res.Tasks++
	d := s.units(s.d.pre[n])
	pr.busy += d
	s.q.push(event{t: s.now + d, kind: evPreDone, p: p, n: n})
}

func (s *sim) handle(e event) {
	switch e.kind {
	case evPreDone:
		s.preDone(e.p, e.n)
	case evPostDone:
		s.procs[e.p].running = false
		s.finished(e.p, e.n)
		s.schedule(e.p)
	case evResult:
		s.childDone(e.n)
	case evStealArrive:
		s.stealArrive(e)
	case evStealReply:
		s.stealReply(e)
	case evWake:
		s.schedule(e.p)
	}
}

func (s *sim) preDone(p, n int32) {
	pr := &s.procs[p]
	if s.d.nkids[n] == 0 {
		s.post(p, n)
		return
	}
	s.wait[n] = s.d.nkids[n]
	for c := s.d.first[n]; c >= 0; c = s.d.next[c] {
		pr.stack(s.pol.Place(s.g, uint32(p), int(s.d.depth[c]))).push(c)
	}
	pr.running = false
	s.schedule(p)
}

func (s *sim) post(p, n int32) {
	d := s.units(s.d.post[n])
	s.procs[p].busy += d
	s.procs[p].running = true
	s.q.push(event{t: s.now + d, kind: evPostDone, p: p, n: n})
}

// finished handles the end of task n on process p.
func (s *sim) finished(p, n int32) {
	par := s.d.parent[n]
	if par < 0 {
		s.done = true
		return
	}
	if o := s.owner[par]; o != p {
		t := s.send(p, o, s.pl.Header+int(s.d.res[n]))
		s.q.push(event{t: t, kind: evResult, n: par})
		return
	}
	s.childDone(par)
}

// childDone counts one child of n as done; the last resumes n.
func (s *sim) childDone(n int32) {
	if s.wait[n]--; s.wait[n] > 0 {
		return
	}
	o := s.owner[n]
	s.procs[o].resume = append(s.procs[o].resume, n)
	s.schedule(o)
}

// schedule gives an idle process work: a resumed task, a task of its own
// stacks, or else a steal request.
func (s *sim) schedule(p int32) {
	pr := &s.procs[p]
	if pr.running || s.done {
		return
	}
	if k := len(pr.resume); k > 0 {
		n := pr.resume[k-1]
		pr.resume = pr.resume[:k-1]
		s.post(p, n)
		return
	}
	for _, st := range s.pol.Order(s.g, uint32(p)) {
		if n, ok := pr.stack(st).popBack(); ok {
			s.start(p, n)
			return
		}
	}
	if pr.syncOut {
		return
	}
	for range 2 {
		st, ok := s.pol.Next(s.g, hws.Thief{Proc: uint32(p), WideOutstanding: pr.wideOut}, s.r)
		if !ok {
			return
		}
		v := int32(st.Victim)
		t := s.send(p, v, s.pl.Header)
		s.q.push(event{t: t, kind: evStealArrive, p: p, q: v, wide: st.Wide, async: st.Async, from: uint8(st.From)})
		if st.Wide {
			s.res.WideAttempts++
			if !pr.wideAsk {
				pr.wideAsk = true
				s.res.WideThieves++
			}
		} else {
			s.res.LocalAttempts++
		}
		if !st.Async {
			pr.syncOut = true
			return
		}
		pr.wideOut = true
	}
}

func (s *sim) stealArrive(e event) {
	v := &s.procs[e.q]
	req := hws.Steal{Victim: uint32(e.q), Wide: e.wide, Async: e.async, From: hws.Stack(e.from)}
	n := int32(-1)
	for _, tk := range s.pol.Serve(s.g, uint32(e.q), req) {
		var got bool
		st := v.stack(tk.From)
		if tk.Newest {
			if k, ok := st.back(); ok && int(s.d.depth[k]) >= tk.MinDepth && s.worthMoving(k, e.wide) {
				n, got = st.popBack()
			}
		} else if k, ok := st.front(); ok && int(s.d.depth[k]) >= tk.MinDepth && s.worthMoving(k, e.wide) {
			n, got = st.popFront()
		}
		if got {
			break
		}
		n = -1
	}
	size := s.pl.Header
	if n >= 0 {
		size += int(s.d.arg[n])
	}
	t := s.send(e.q, e.p, size)
	if n >= 0 {
		t += int64(s.pl.TaskOverhead)
	}
	s.q.push(event{t: t, kind: evStealReply, p: e.p, q: e.q, n: n, wide: e.wide, async: e.async, from: e.from})
}

// worthMoving reports whether task n may be given to a thief, in another
// group when wide: hws.Policy.WorthMoving with the task's subtree work and
// its argument and result bytes at the uplink's bandwidth.
func (s *sim) worthMoving(n int32, wide bool) bool {
	if !wide {
		return true
	}
	work := time.Duration(s.work[n]) * s.pl.Unit
	move := time.Duration(float64(s.d.arg[n]+s.d.res[n]) / s.pl.WideBandwidth * 1e9)
	if s.pol.WorthMoving(work, move, s.pl.PerGroup) {
		return true
	}
	s.res.WideKept++
	return false
}

func (s *sim) stealReply(e event) {
	pr := &s.procs[e.p]
	if e.async {
		pr.wideOut = false
	} else {
		pr.syncOut = false
	}
	if e.n >= 0 {
		if e.wide {
			s.res.WideSteals++
		} else {
			s.res.LocalSteals++
		}
		pr.stack(s.pol.Place(s.g, uint32(e.p), int(s.d.depth[e.n]))).push(e.n)
	}
	s.schedule(e.p)
}
