package athread

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/internal/osyield"
	"github.com/pcor-go/pcor/pcor"
)

// EnvVPs is the environment variable that sets the number of VPs per
// process when Config.VPs is zero.
const EnvVPs = "ATHREAD_VPS"

// DefaultServiceThread is the pcor thread id the runtimes of a job use to
// talk to each other.
const DefaultServiceThread pcor.ThreadID = 0x7fff0000

// Config configures a Runtime. The zero value is a single-process runtime
// with GOMAXPROCS VPs.
type Config struct {
	// VPs is the number of virtual processors of this process (default:
	// $ATHREAD_VPS, else GOMAXPROCS).
	VPs int
	// Node connects the runtime to the other processes of the job; nil
	// runs in this process only.
	Node *pcor.Node
	// Procs are the processes of the job, this one included (default: the
	// members of Node's directory, or only this process).
	Procs []pcor.ProcID
	// Registry holds the functions that may migrate (default
	// DefaultRegistry).
	Registry *Registry
	// Policy is the between-process policy (default &Random{}).
	Policy Policy
	// ServiceThread is the pcor thread id of the runtime's own messages
	// (default DefaultServiceThread); the same in every process.
	ServiceThread pcor.ThreadID
	// Trace records the execution trace (WriteTrace) and DAG records the
	// task graph (WriteDOT).
	Trace, DAG bool
	// IdleSpin is how long an idle VP keeps looking for work before it
	// sleeps (default DefaultIdleSpin; negative: sleep at once).
	IdleSpin time.Duration
	// TimeSlice is the time slice the runtime asks the kernel for on
	// behalf of every thread of its process while it runs, so that a
	// thread woken for work preempts a busy one at once instead of at the
	// next tick (see DefaultTimeSlice; Linux 6.12 and later, elsewhere
	// nothing). Zero: DefaultTimeSlice with a Node, none without;
	// negative: none. Close gives the threads their slice back.
	TimeSlice time.Duration
}

// Runtime runs threads on the VPs of this process and, with a Node, moves
// them between the processes of the job.
type Runtime struct {
	cfg    Config
	node   *pcor.Node
	proc   pcor.ProcID
	vps    []*vp
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool
	once   sync.Once
	funcs  []*funcInfo

	injMu sync.Mutex
	inj   []*task
	ninj  atomic.Int32

	pool       pool
	depthFirst bool // the VPs take the newest offered task (DepthFirstPolicy)

	idleMu sync.Mutex
	idle   []*vp
	nidle  atomic.Int32

	created atomic.Uint64
	cl      *cluster
	rec     *recorder
	epoch   time.Time
	ownNode bool
	// restoreProcs is the GOMAXPROCS to restore on Close (0: unchanged).
	restoreProcs int
	// slice is the time slice asked for the process's threads (0: none).
	slice time.Duration
}

// New starts a runtime. With a Node it first checks, with every other
// process of the job, that the registered functions are the same, and
// fails with an error wrapping ErrRegistry if not.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.VPs <= 0 {
		if v, err := strconv.Atoi(os.Getenv(EnvVPs)); err == nil && v > 0 {
			cfg.VPs = v
		} else {
			cfg.VPs = runtime.GOMAXPROCS(0)
		}
	}
	if cfg.Registry == nil {
		cfg.Registry = DefaultRegistry
	}
	if cfg.Policy == nil {
		cfg.Policy = &Random{}
	}
	if cfg.IdleSpin == 0 {
		cfg.IdleSpin = DefaultIdleSpin
	}
	if cfg.ServiceThread == 0 {
		cfg.ServiceThread = DefaultServiceThread
	}
	if cfg.TimeSlice == 0 && cfg.Node != nil {
		cfg.TimeSlice = DefaultTimeSlice
	}
	rt := &Runtime{cfg: cfg, node: cfg.Node, epoch: time.Now()}
	if dp, ok := cfg.Policy.(DepthFirstPolicy); ok {
		rt.depthFirst = dp.DepthFirst()
	}
	rt.funcs = cfg.Registry.freeze()
	rt.base, rt.cancel = context.WithCancel(context.Background())
	if cfg.Trace || cfg.DAG {
		rt.rec = newRecorder(cfg.Trace, cfg.DAG)
	}
	if rt.node != nil {
		rt.proc = rt.node.Proc()
		// The service goroutines (requests for work, results) must not
		// wait behind busy VPs for a P until the Go scheduler preempts
		// one (10 ms): give them one of their own.
		if p := runtime.GOMAXPROCS(0); p <= cfg.VPs {
			rt.restoreProcs = p
			runtime.GOMAXPROCS(cfg.VPs + 1)
		}
		cl, err := newCluster(ctx, rt)
		if err != nil {
			if rt.restoreProcs > 0 {
				runtime.GOMAXPROCS(rt.restoreProcs)
			}
			rt.cancel()
			return nil, err
		}
		rt.cl = cl
	}
	rt.vps = make([]*vp, cfg.VPs)
	for i := range rt.vps {
		w := &vp{rt: rt, id: i, wake: make(chan struct{}, 1), rng: uint32(i)*2654435761 + 1}
		w.dq.init()
		rt.vps[i] = w
	}
	rt.wg.Add(len(rt.vps))
	for _, w := range rt.vps {
		go w.loop()
	}
	if rt.cl != nil {
		rt.cl.start()
	}
	// After the VPs and service goroutines started: the threads made for
	// them are given the slice too.
	if cfg.TimeSlice > 0 {
		rt.slice = cfg.TimeSlice
		acquireSlice(rt.slice)
	}
	return rt, nil
}

// Proc is this process's id (0 without a node).
func (rt *Runtime) Proc() pcor.ProcID { return rt.proc }

// VPs is the number of VPs of this process.
func (rt *Runtime) VPs() int { return len(rt.vps) }

// Node is the runtime's node (nil for a single-process runtime).
func (rt *Runtime) Node() *pcor.Node { return rt.node }

// Context returns a context carrying the runtime, for creating threads
// from outside any thread; it ends when the runtime is closed.
func (rt *Runtime) Context() context.Context { return WithRuntime(rt.base, rt) }

// Close stops the runtime: threads not started yet fail with ErrClosed,
// running thread bodies see their context end (Close waits for them),
// and every goroutine of the runtime ends. The node is not closed. It is
// idempotent.
func (rt *Runtime) Close() error {
	rt.once.Do(func() {
		rt.closed.Store(true)
		rt.cancel()
		for _, w := range rt.vps {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		if rt.cl != nil {
			rt.cl.close()
		}
		rt.drain()
		rt.wg.Wait()
		rt.drain()
		if rt.ownNode {
			rt.node.Close()
		}
		if rt.restoreProcs > 0 {
			runtime.GOMAXPROCS(rt.restoreProcs)
		}
		releaseSlice(rt.slice)
	})
	return nil
}

// drain fails every task not started yet with ErrClosed.
func (rt *Runtime) drain() {
	fail := func(t *task) {
		if t != nil && t.state.CompareAndSwap(stateReady, stateRunning) {
			rt.complete(t, ErrClosed)
		}
	}
	for _, w := range rt.vps {
		for {
			t, lost := w.dq.steal()
			if t == nil && !lost {
				break
			}
			fail(t)
		}
	}
	rt.injMu.Lock()
	inj := rt.inj
	rt.inj = nil
	rt.ninj.Store(0)
	rt.injMu.Unlock()
	for _, t := range inj {
		fail(t)
	}
	for _, t := range rt.pool.drain() {
		fail(t)
	}
}

// submit makes a created task ready.
func (rt *Runtime) submit(c *threadCtx, t *task) {
	rt.created.Add(1)
	if rt.rec != nil {
		rt.rec.fork(c, t)
	}
	if rt.closed.Load() {
		t.state.Store(stateRunning)
		rt.complete(t, ErrClosed)
		return
	}
	if c == nil {
		// A thread created outside any thread ends when the runtime
		// closes.
		ctx, cancel := context.WithCancel(t.ctx)
		stop := context.AfterFunc(rt.base, cancel)
		t.ctx = ctx
		t.cleanup = func() { stop(); cancel() }
	}
	switch {
	case t.attr.Place == OnProc:
		if rt.cl != nil && t.attr.Proc != rt.proc {
			rt.cl.spawn(t)
			return
		}
		if rt.cl == nil && t.attr.Proc != rt.proc {
			t.state.Store(stateRunning)
			rt.complete(t, fmt.Errorf("athread: no process %d: the runtime runs in one process", t.attr.Proc))
			return
		}
		rt.runOwnGoroutine(t)
		return
	case t.attr.Place == Anywhere && t.fn != nil && rt.cl != nil && rt.cl.peers() > 0:
		if rt.cl.offer(t) {
			return
		}
	}
	if c != nil && c.w != nil && c.t.rt == rt {
		c.w.push(t)
		return
	}
	rt.inject(t)
}

// runOwnGoroutine starts a thread on a goroutine of its own with an
// endpoint of its own (Place OnProc).
func (rt *Runtime) runOwnGoroutine(t *task) {
	t.state.Store(stateRunning)
	if rt.node != nil {
		if t.endpt == nil {
			t.endpt = rt.node.NewThread()
		}
		t.addr = t.endpt.Addr()
	}
	if t.started == nil {
		t.started = make(chan struct{})
	}
	close(t.started)
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		t.tc = threadCtx{Context: t.ctx, t: t}
		rt.complete(t, safeRun(t.self, &t.tc, rt.proc))
	}()
}

func (rt *Runtime) inject(t *task) {
	rt.injMu.Lock()
	rt.inj = append(rt.inj, t)
	rt.ninj.Store(int32(len(rt.inj)))
	rt.injMu.Unlock()
	rt.wakeOne()
}

func (rt *Runtime) takeInjected() *task {
	if rt.ninj.Load() == 0 {
		return nil
	}
	rt.injMu.Lock()
	defer rt.injMu.Unlock()
	for len(rt.inj) > 0 {
		t := rt.inj[0]
		rt.inj[0] = nil
		rt.inj = rt.inj[1:]
		rt.ninj.Store(int32(len(rt.inj)))
		if t.state.Load() == stateReady {
			return t
		}
	}
	return nil
}

// hasWork reports whether a ready task may be waiting somewhere.
func (rt *Runtime) hasWork() bool {
	if rt.ninj.Load() > 0 || rt.pool.len() > 0 {
		return true
	}
	for _, w := range rt.vps {
		if w.dq.size() > 0 {
			return true
		}
	}
	return false
}

func (rt *Runtime) addIdle(w *vp) {
	rt.idleMu.Lock()
	rt.idle = append(rt.idle, w)
	rt.nidle.Store(int32(len(rt.idle)))
	rt.idleMu.Unlock()
}

func (rt *Runtime) removeIdle(w *vp) {
	rt.idleMu.Lock()
	for i, v := range rt.idle {
		if v == w {
			rt.idle = append(rt.idle[:i], rt.idle[i+1:]...)
			break
		}
	}
	rt.nidle.Store(int32(len(rt.idle)))
	rt.idleMu.Unlock()
}

// wakeOne wakes a sleeping VP, if any.
func (rt *Runtime) wakeOne() {
	if rt.nidle.Load() == 0 {
		return
	}
	rt.idleMu.Lock()
	var w *vp
	if n := len(rt.idle); n > 0 {
		w = rt.idle[n-1]
		rt.idle = rt.idle[:n-1]
		rt.nidle.Store(int32(len(rt.idle)))
	}
	rt.idleMu.Unlock()
	if w != nil {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// complete records a task's outcome.
func (rt *Runtime) complete(t *task, err error) {
	if t.cleanup != nil {
		t.cleanup()
		t.cleanup = nil
	}
	if rt.cl != nil && t.from != nil {
		rt.cl.reply(t, err)
	}
	t.finish(err)
}

// join waits for x on behalf of the caller of Join.
func (rt *Runtime) join(ctx context.Context, x *task) error {
	c := threadOf(ctx)
	if c == nil || c.w == nil || c.t.rt != rt {
		return rt.wait(ctx, x)
	}
	w := c.w
	if rt.rec != nil {
		w.segment(c.t, nil)
		defer w.segment(nil, c.t)
	}
	outer := w.cur
	w.cur = nil
	defer func() { w.cur = outer }()
	var spin spinner
	for x.state.Load() != stateDone {
		if t := w.pop(); t != nil {
			w.exec(t)
			spin.reset()
			continue
		}
		if x.state.CompareAndSwap(stateReady, stateRunning) {
			w.runClaimed(x)
			break
		}
		if t := w.find(); t != nil {
			w.exec(t)
			spin.reset()
			continue
		}
		if x.state.Load() == stateRemote {
			// The thread runs in another process: its result is
			// received by the service goroutine, on another OS thread,
			// which this spin must not keep from a CPU (nor the
			// thread of the other process that is to send it).
			osyield.Yield()
		}
		if spin.again(rt.cfg.IdleSpin) {
			continue
		}
		if err := w.park(ctx, x); err != nil {
			return err
		}
		if rt.closed.Load() && x.state.Load() != stateDone {
			return ErrClosed
		}
	}
	return nil
}

// wait blocks a goroutine that is not a VP until x is done.
func (rt *Runtime) wait(ctx context.Context, x *task) error {
	ch := make(chan struct{}, 1)
	if !x.addWaiter(ch) {
		return nil
	}
	for x.state.Load() != stateDone {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
