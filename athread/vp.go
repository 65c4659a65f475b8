package athread

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// spinRounds is how many times an idle VP looks for work, yielding in
// between, before it starts watching the clock: waking a sleeping VP costs
// far more than a few empty looks.
const spinRounds = 64

// DefaultIdleSpin is how long an idle VP keeps looking for work before it
// sleeps (Config.IdleSpin).
const DefaultIdleSpin = 500 * time.Microsecond

// spinner tracks how long a VP has been looking for work in vain.
type spinner struct {
	rounds int
	since  time.Time
}

// again reports whether the VP should look once more (after yielding)
// rather than sleep.
func (s *spinner) again(limit time.Duration) bool {
	s.rounds++
	if s.rounds < spinRounds {
		runtime.Gosched()
		return true
	}
	if s.since.IsZero() {
		s.since = time.Now()
	}
	if limit > 0 && time.Since(s.since) < limit {
		runtime.Gosched()
		return true
	}
	*s = spinner{}
	return false
}

func (s *spinner) reset() { *s = spinner{} }

// vp is a virtual processor: a goroutine that runs ready tasks from its
// own deque and steals from the others when it has none.
type vp struct {
	rt   *Runtime
	id   int
	mu   sync.Mutex // serialises the owner end of dq
	dq   deque
	wake chan struct{}

	tasksRun    atomic.Uint64
	stealsTried atomic.Uint64
	stealsWon   atomic.Uint64
	traceMu     sync.Mutex
	trace       []traceEvent
	cur         *task // task whose body this VP is running (trace)
	curStart    int64
	rng         uint32
}

func (w *vp) push(t *task) {
	w.mu.Lock()
	w.dq.push(t)
	w.mu.Unlock()
	if w.rt.nidle.Load() > 0 {
		w.rt.wakeOne()
	}
}

func (w *vp) pop() *task {
	w.mu.Lock()
	t := w.dq.pop()
	w.mu.Unlock()
	return t
}

// loop is the VP's goroutine.
func (w *vp) loop() {
	defer w.rt.wg.Done()
	var spin spinner
	for {
		if t := w.find(); t != nil {
			w.exec(t)
			spin.reset()
			continue
		}
		if w.rt.closed.Load() {
			return
		}
		if spin.again(w.rt.cfg.IdleSpin) {
			continue
		}
		w.park(context.Background(), nil)
	}
}

// find returns a ready task: from the VP's own deque (newest first), the
// tasks given to the process (threads created outside any VP, or arriving
// from other processes), the tasks offered to other processes (the
// shallowest, or under a DepthFirstPolicy the newest), and last by
// stealing from another VP the task highest in the tree. Entries whose
// task was already taken are skipped.
func (w *vp) find() *task {
	for {
		t := w.pop()
		if t == nil {
			break
		}
		if t.state.Load() == stateReady {
			return t
		}
	}
	rt := w.rt
	if t := rt.takeInjected(); t != nil {
		return t
	}
	if rt.depthFirst {
		if t := rt.pool.takeNewest(); t != nil {
			return t
		}
	} else if t := rt.pool.take(); t != nil {
		return t
	}
	return w.steal()
}

// steal takes a task from the VP whose oldest task is the shallowest.
func (w *vp) steal() *task {
	vps := w.rt.vps
	if len(vps) < 2 {
		return nil
	}
	for attempt := 0; attempt < 2*len(vps); attempt++ {
		var best *vp
		bestDepth := int32(-1)
		n := len(vps)
		w.rng = w.rng*1664525 + 1013904223
		off := int(w.rng>>16) % n
		for i := 0; i < n; i++ {
			v := vps[(off+i)%n]
			if v == w {
				continue
			}
			if d := v.dq.peekDepth(); d >= 0 && (best == nil || d < bestDepth) {
				best, bestDepth = v, d
			}
		}
		if best == nil {
			return nil
		}
		w.stealsTried.Add(1)
		t, _ := best.dq.steal()
		if t != nil && t.state.Load() == stateReady {
			w.stealsWon.Add(1)
			return t
		}
	}
	return nil
}

// exec runs t on this VP if it is still ready.
func (w *vp) exec(t *task) {
	if !t.state.CompareAndSwap(stateReady, stateRunning) {
		return
	}
	w.runClaimed(t)
}

func (w *vp) runClaimed(t *task) {
	rt := w.rt
	w.tasksRun.Add(1)
	outer := w.cur
	if rt.rec != nil {
		w.segment(outer, t)
	}
	w.cur = t
	t.tc = threadCtx{Context: t.ctx, w: w, t: t}
	err := safeRun(t.self, &t.tc, rt.proc)
	w.cur = outer
	if rt.rec != nil {
		w.segment(t, outer)
	}
	rt.complete(t, err)
}

// park sleeps until new work may be available, or until x (if not nil)
// is done, or ctx or the runtime ends.
func (w *vp) park(ctx context.Context, x *task) error {
	rt := w.rt
	rt.addIdle(w)
	defer rt.removeIdle(w)
	if x != nil && !x.addWaiter(w.wake) {
		return nil
	}
	if rt.hasWork() || rt.closed.Load() {
		return nil
	}
	if rt.cl != nil {
		rt.cl.wantWork()
	}
	select {
	case <-w.wake:
	case <-rt.base.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
