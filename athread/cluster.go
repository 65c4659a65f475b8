package athread

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// Timing of the between-process protocol.
const (
	stealReplyTimeout = 500 * time.Millisecond
	minBackoff        = 50 * time.Microsecond
	maxBackoff        = time.Millisecond
	sendTimeout       = 30 * time.Second
	maxForwardHops    = 8
	// askedFor is how long a question for the endpoint of a thread that
	// has not come (or has ended) is kept, and maxAsked how many are.
	askedFor     = time.Minute
	maxAsked     = 4096
	startTimeout = 30 * time.Second
	// hungryFor is how long a thief told there was no work is remembered
	// as wanting some.
	hungryFor = 50 * time.Millisecond
	// heldFor is how long a thief counts on a victim that told it there
	// was no work to hand it the next thread it offers (a margin below
	// hungryFor for the answer's way back and the thief's own delays).
	heldFor = hungryFor * 4 / 5
)

// origin is where a thread that came from another process must send its
// result.
type origin struct {
	proc pcor.ProcID
	key  uint64
}

// posted is a send in flight, for the sender goroutine to reap.
type posted struct {
	req  *pcor.Request
	to   pcor.ProcID
	size int
}

// cluster is the between-process part of a runtime: the offer pool's
// service to other processes, the idle process's requests for work, and
// the results travelling back.
type cluster struct {
	rt   *Runtime
	node *pcor.Node
	svc  pcor.ThreadID
	pol  Policy

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	out    chan posted
	eps    sync.Pool // *pcor.Thread of the service thread, one per sending goroutine at a time
	want   chan struct{}
	replyc chan uint32   // steal request answered (seq): got a task or not
	fed    chan struct{} // a thread came from another process
	done   chan struct{}
	doneMu sync.Once

	mu        sync.Mutex
	procs     []pcor.ProcID // live, sorted, self included
	outst     map[uint64]*task
	nextKey   uint64
	hungry    map[pcor.ProcID]time.Time // thieves told there was no work, and when
	heldBy    map[pcor.ProcID]time.Time // victims holding this process as hungry, since when
	traceFrom map[pcor.ProcID][]chromeEvent
	traceWait chan pcor.ProcID
	// placed are the threads other processes placed here (Place OnProc)
	// that run, with their endpoints' ids; asked, the threads whose
	// endpoint an owner asked for before they came, and when.
	placed map[origin]pcor.ThreadID
	asked  map[origin]time.Time

	seq atomic.Uint32

	stealsSent, stealsGot, stealsServed, tasksGiven atomic.Uint64
	resultsIn, resultsOut, reRuns, peersLost        atomic.Uint64
	bytesOut, bytesIn, malformed                    atomic.Uint64
}

func newCluster(ctx context.Context, rt *Runtime) (*cluster, error) {
	c := &cluster{rt: rt, node: rt.node, svc: rt.cfg.ServiceThread, pol: rt.cfg.Policy,
		out: make(chan posted, 1024), want: make(chan struct{}, 1), replyc: make(chan uint32, 16),
		fed: make(chan struct{}, 1), done: make(chan struct{}), outst: map[uint64]*task{},
		hungry: map[pcor.ProcID]time.Time{}, heldBy: map[pcor.ProcID]time.Time{},
		traceFrom: map[pcor.ProcID][]chromeEvent{}, traceWait: make(chan pcor.ProcID, 64),
		placed: map[origin]pcor.ThreadID{}, asked: map[origin]time.Time{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.eps.New = func() any { return c.node.Thread(c.svc) }
	procs := slices.Clone(rt.cfg.Procs)
	if len(procs) == 0 {
		if d := rt.node.Directory(); d != nil {
			for _, m := range d.Members() {
				procs = append(procs, pcor.ProcID(m.Proc))
			}
		}
	}
	if !slices.Contains(procs, rt.proc) {
		procs = append(procs, rt.proc)
	}
	slices.Sort(procs)
	c.procs = slices.Compact(procs)
	if err := c.hello(ctx); err != nil {
		c.cancel()
		return nil, err
	}
	return c, nil
}

// hello checks that every process registered the same functions. A
// second round keeps every process in the exchange until all have compared,
// so that a process refusing to start does not leave before the others have
// its registrations.
func (c *cluster) hello(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	desc := []byte(describe(c.rt.funcs))
	t := c.node.Thread(c.svc)
	var failed, mismatch error
	others := slices.DeleteFunc(slices.Clone(c.procs), func(p pcor.ProcID) bool { return p == c.rt.proc })
	for _, p := range others {
		if err := c.startSend(ctx, t, p, tagHello, desc); err != nil && failed == nil {
			failed = fmt.Errorf("athread: start-up with process %d: %w", p, err)
		}
	}
	for _, p := range others {
		m, err := t.Recv(ctx, pcor.Addr{Proc: p, Thread: c.svc}, tagHello)
		if err != nil {
			if failed == nil {
				failed = fmt.Errorf("athread: start-up with process %d: %w", p, err)
			}
			continue
		}
		if d := compareRegistries(string(desc), string(m.Data)); d != "" && mismatch == nil {
			mismatch = fmt.Errorf("%w: process %d against process %d: %s", ErrRegistry, c.rt.proc, p, d)
		}
	}
	for _, p := range others {
		c.startSend(ctx, t, p, tagReady, nil)
	}
	for _, p := range others {
		if _, err := t.Recv(ctx, pcor.Addr{Proc: p, Thread: c.svc}, tagReady); err != nil && failed == nil {
			failed = fmt.Errorf("athread: start-up with process %d: %w", p, err)
		}
	}
	if mismatch != nil {
		return mismatch
	}
	return failed
}

// startSend sends a start-up message, retrying while the destination has
// no route yet (the routing table follows the directory's events).
func (c *cluster) startSend(ctx context.Context, t *pcor.Thread, p pcor.ProcID, tag pcor.Tag, data []byte) error {
	for {
		err := t.Send(ctx, pcor.Addr{Proc: p, Thread: c.svc}, tag, data)
		var ue *pcor.UnreachableError
		if err == nil || !errors.As(err, &ue) || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

func (c *cluster) start() {
	c.wg.Add(3)
	go c.receiver()
	go c.sender()
	go c.thief()
	for _, p := range c.procs {
		if p != c.rt.proc {
			c.wg.Add(1)
			go c.watch(p)
		}
	}
}

func (c *cluster) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	c.node.Thread(c.svc).Send(ctx, pcor.Addr{Proc: c.rt.proc, Thread: c.svc}, tagStop, nil)
	cancel()
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	var lost []*task
	for k, t := range c.outst {
		delete(c.outst, k)
		lost = append(lost, t)
	}
	c.mu.Unlock()
	for _, t := range lost {
		c.rt.complete(t, ErrClosed)
	}
}

// peers is the number of other live processes.
func (c *cluster) peers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.procs) - 1
}

func (c *cluster) live() []pcor.ProcID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.procs)
}

// send posts a message from the calling goroutine, so that its datagrams
// leave at once (handing it to another goroutine to post costs a wake-up,
// milliseconds on a busy machine), and gives the request to the sender
// goroutine to reap.
func (c *cluster) send(to pcor.ProcID, tag pcor.Tag, data []byte) {
	if c.ctx.Err() != nil {
		return
	}
	t := c.eps.Get().(*pcor.Thread)
	req := t.Isend(pcor.Addr{Proc: to, Thread: c.svc}, tag, data)
	c.eps.Put(t)
	if done, err := req.Test(); done && err == nil {
		// Taken at once (shared memory takes a message as it is
		// posted): nothing for the sender goroutine to reap, and no
		// wake-up of it.
		c.bytesOut.Add(uint64(len(data)))
		return
	}
	select {
	case c.out <- posted{req, to, len(data)}:
	case <-c.ctx.Done():
		req.Cancel()
	}
}

// sender reaps the runtime's sends (posted without waiting for each to be
// accepted: a blocking Send per message would put a round trip between
// consecutive messages): it counts the bytes of those that completed, and
// marks a peer down when a send to it failed because it is gone.
func (c *cluster) sender() {
	defer c.wg.Done()
	var inflight []posted
	reap := func() {
		kept := inflight[:0]
		for _, p := range inflight {
			done, err := p.req.Test()
			if !done {
				kept = append(kept, p)
				continue
			}
			if err == nil {
				c.bytesOut.Add(uint64(p.size))
			} else if errors.Is(err, pcor.ErrPeerDown) || errors.Is(err, pcor.ErrUnreachable) {
				c.peerDown(p.to, err)
			}
		}
		clear(inflight[len(kept):])
		inflight = kept
	}
	for {
		if len(inflight) == 0 {
			select {
			case <-c.ctx.Done():
				return
			case p := <-c.out:
				inflight = append(inflight, p)
			}
		} else {
			select {
			case <-c.ctx.Done():
				for _, p := range inflight {
					p.req.Cancel()
				}
				for {
					select {
					case p := <-c.out:
						p.req.Cancel()
					default:
						return
					}
				}
			case p := <-c.out:
				inflight = append(inflight, p)
			case <-time.After(time.Millisecond):
			}
		}
		reap()
	}
}

// watch keeps a receive posted on p that no one answers: pcor fails it
// when p is removed (the directory announced it left or died). It waits
// on the request's Done, outside the port's progress: a receive waiting
// in Wait would count as a waiter of the port for the whole run, and keep
// every message through it with the port's dispatcher goroutine, a
// hand-over between threads for each.
func (c *cluster) watch(p pcor.ProcID) {
	defer c.wg.Done()
	t := c.node.Thread(c.svc)
	r := t.Irecv(pcor.Addr{Proc: p, Thread: c.svc}, tagWatch, nil)
	select {
	case <-r.Done():
	case <-c.ctx.Done():
		r.Cancel()
		return
	}
	_, err := r.Test()
	if c.ctx.Err() != nil {
		return
	}
	if err == nil {
		err = errors.New("unexpected watch message")
	}
	c.peerDown(p, err)
}

// peerDown forgets p: threads it was running are re-run (idempotent) or
// fail their Join with a *PeerError. It may be called again for p (a send
// to it failed after it was forgotten): threads handed to it since are
// lost the same way.
func (c *cluster) peerDown(p pcor.ProcID, why error) {
	if p == c.rt.proc {
		return
	}
	c.mu.Lock()
	i := slices.Index(c.procs, p)
	if i >= 0 {
		c.procs = slices.Delete(c.procs, i, i+1)
	}
	delete(c.hungry, p)
	delete(c.heldBy, p)
	var lost []*task
	for k, t := range c.outst {
		if t.at == p {
			delete(c.outst, k)
			lost = append(lost, t)
		}
	}
	c.mu.Unlock()
	if i >= 0 {
		c.peersLost.Add(1)
		if p == 0 {
			c.finish()
		}
	}
	c.lose(p, lost, why)
}

// lose re-runs here the idempotent threads among those process p was
// given and fails the Joins of the others with a *PeerError.
func (c *cluster) lose(p pcor.ProcID, lost []*task, why error) {
	for _, t := range lost {
		if t.attr.Idempotent && t.attr.Place != OnProc {
			c.reRuns.Add(1)
			t.key = 0
			t.state.Store(stateReady)
			c.rt.pool.put(t)
			if !c.feedHungry() {
				c.rt.wakeOne()
			}
			continue
		}
		name := ""
		if t.fn != nil {
			name = t.fn.name
		}
		if t.started != nil {
			select {
			case <-t.started:
			default:
				close(t.started)
			}
		}
		c.rt.complete(t, &PeerError{Proc: p, Func: name, Err: why})
	}
}

// offer puts a migratable thread in the offer pool if the policy says it
// is global.
func (c *cluster) offer(t *task) bool {
	info := TaskInfo{Func: t.fn.name, Depth: int(t.depth), Cost: t.attr.Cost, Size: -1, Owner: c.rt.proc}
	cl := c.pol.Classify(info)
	if cl == ClassLocal {
		return false
	}
	in, err := t.self.packIn(nil)
	if err != nil {
		return false
	}
	t.class = cl
	t.inBytes = in
	c.rt.pool.put(t)
	if !c.feedHungry() {
		c.rt.wakeOne()
	}
	return true
}

// feedHungry hands an offered thread at once to a process that recently
// asked for work and got none, rather than letting it find the work on its
// next request. It reports whether it gave one.
func (c *cluster) feedHungry() bool {
	c.mu.Lock()
	if len(c.hungry) == 0 {
		c.mu.Unlock()
		return false
	}
	var thief pcor.ProcID
	var since time.Time
	for p, t := range c.hungry {
		if since.IsZero() || t.Before(since) {
			thief, since = p, t
		}
	}
	delete(c.hungry, thief)
	c.mu.Unlock()
	if time.Since(since) > hungryFor {
		return false
	}
	t := c.rt.pool.give(func(t *task) bool { return c.pol.Allow(thief, c.info(t)) })
	if t == nil {
		return false
	}
	c.handOut(t, thief, 0, 0)
	return true
}

func (c *cluster) info(t *task) TaskInfo {
	return TaskInfo{Func: t.fn.name, Depth: int(t.depth), Cost: t.attr.Cost, Size: len(t.inBytes), Class: t.class, Owner: c.rt.proc}
}

// spawn starts t in process t.attr.Proc (Place OnProc).
func (c *cluster) spawn(t *task) {
	t.started = make(chan struct{})
	in, err := t.self.packIn(nil)
	if err != nil {
		close(t.started)
		t.state.Store(stateRunning)
		c.rt.complete(t, fmt.Errorf("athread: packing the input of %q: %w", t.fn.name, err))
		return
	}
	t.inBytes = in
	if !slices.Contains(c.live(), t.attr.Proc) {
		close(t.started)
		t.state.Store(stateRunning)
		c.rt.complete(t, &PeerError{Proc: t.attr.Proc, Func: t.fn.name, Err: errors.New("not a live process of the job")})
		return
	}
	t.state.Store(stateRemote)
	c.handOut(t, t.attr.Proc, 0, flagSpawn)
}

// handOut records t as running in process to and sends it there.
func (c *cluster) handOut(t *task, to pcor.ProcID, seq uint32, flags uint8) {
	c.mu.Lock()
	if !slices.Contains(c.procs, to) {
		// Gone since it asked (or since the spawn looked): a thread
		// placed there fails as if it had been running there; a stolen
		// one, which never left, goes back to the pool.
		c.mu.Unlock()
		if flags&flagSpawn != 0 {
			c.lose(to, []*task{t}, pcor.ErrPeerDown)
			return
		}
		t.state.Store(stateReady)
		c.rt.pool.put(t)
		c.rt.wakeOne()
		return
	}
	c.nextKey++
	t.key = c.nextKey
	t.at = to
	c.outst[t.key] = t
	c.mu.Unlock()
	if t.attr.Idempotent {
		flags |= flagIdempotent
	}
	m := taskMsg{owner: c.rt.proc, key: t.key, seq: seq, fn: t.fn.index, depth: t.depth, cost: t.attr.Cost,
		flags: flags, in: t.inBytes}
	c.tasksGiven.Add(1)
	c.send(to, tagTask, m.append(make([]byte, 0, taskHeader+len(t.inBytes))))
}

// wantWork tells the thief goroutine that a VP is idle.
func (c *cluster) wantWork() {
	select {
	case c.want <- struct{}{}:
	default:
	}
}

// thief asks other processes for work while this process has idle VPs
// and nothing to run: one request at a time, waiting for each answer,
// except the asynchronous ones of an AsyncPolicy (one outstanding at a
// time). Once every other process has answered that it has no work and
// holds this one as hungry, asking again finds nothing they would not
// hand over unasked: the thief then waits for a thread to come (or for
// the first of them to forget it) rather than asking every millisecond,
// whose messages and wake-ups take the CPUs from the processes that have
// the work.
func (c *cluster) thief() {
	defer c.wg.Done()
	t := c.node.Thread(c.svc)
	rt := c.rt
	ap, _ := c.pol.(AsyncPolicy)
	var async outstanding
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.want:
		}
		attempt := 0
		var last pcor.ProcID
		backoff := minBackoff
		for c.ctx.Err() == nil && rt.nidle.Load() > 0 && !rt.hasWork() {
			c.drainReplies(&async)
			if until, ok := c.heldByAll(); ok {
				// Held by all already (a VP went idle again, as one
				// does in each Join of a thread running elsewhere):
				// asking would find nothing.
				if _, stop := c.pause(time.Until(until), &async); stop {
					return
				}
				continue
			}
			procs := c.live()
			q := StealQuery{Self: rt.proc, Thief: rt.proc, Procs: procs, Attempt: attempt, Last: last, Outstanding: async.seq != 0,
				Held: c.heldNow()}
			victim, ok := c.pol.Victim(q)
			if ok && victim != rt.proc && slices.Contains(procs, victim) {
				seq := c.seq.Add(1)
				req := stealReq{thief: rt.proc, seq: seq}
				c.stealsSent.Add(1)
				if ap != nil && async.seq == 0 && ap.Async(q, victim) {
					async = outstanding{seq: seq, since: time.Now()}
					req.async = true
					c.send(victim, tagSteal, req.append(nil))
					continue
				}
				ctx, cancel := context.WithTimeout(c.ctx, sendTimeout)
				err := t.Send(ctx, pcor.Addr{Proc: victim, Thread: c.svc}, tagSteal, req.append(nil))
				cancel()
				if err != nil {
					if errors.Is(err, pcor.ErrPeerDown) || errors.Is(err, pcor.ErrUnreachable) {
						c.peerDown(victim, err)
					}
				} else if c.awaitReply(seq, &async) {
					attempt, backoff = 0, minBackoff
					continue
				}
				last = victim
				attempt++
				if attempt < len(procs)-1 {
					continue
				}
			}
			wait := backoff
			if until, ok := c.heldByAll(); ok {
				wait = max(wait, time.Until(until))
			}
			woken, stop := c.pause(wait, &async)
			if stop {
				return
			}
			if woken {
				continue
			}
			backoff = min(2*backoff, maxBackoff)
		}
	}
}

// pause waits up to d for the answer to an asynchronous request (recorded
// in async) or a thread given to this process: woken says one came, stop
// that the runtime is closing.
func (c *cluster) pause(d time.Duration, async *outstanding) (woken, stop bool) {
	select {
	case s := <-c.replyc:
		async.answered(s)
		return true, false
	case <-c.fed:
		return true, false
	case <-time.After(d):
		return false, false
	case <-c.ctx.Done():
		return false, true
	}
}

// heldNow lists the processes that hold this one as hungry now (sorted).
func (c *cluster) heldNow() []pcor.ProcID {
	c.mu.Lock()
	defer c.mu.Unlock()
	var held []pcor.ProcID
	now := time.Now()
	for _, p := range c.procs {
		if since, ok := c.heldBy[p]; ok && now.Sub(since) < heldFor {
			held = append(held, p)
		}
	}
	return held
}

// heldByAll reports whether every other live process holds this one as
// hungry, and until when the thief may count on all of them.
func (c *cluster) heldByAll() (until time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p == c.rt.proc {
			continue
		}
		since, held := c.heldBy[p]
		if !held {
			return time.Time{}, false
		}
		if u := since.Add(heldFor); until.IsZero() || u.Before(until) {
			until = u
		}
	}
	return until, !until.IsZero() && time.Now().Before(until)
}

// outstanding is the thief's asynchronous request, if any (seq 0: none).
type outstanding struct {
	seq   uint32
	since time.Time
}

// answered forgets the request if s (from replyc) answers it.
func (o *outstanding) answered(s uint32) {
	if o.seq != 0 && s&^(1<<31) == o.seq {
		o.seq = 0
	}
}

// drainReplies takes the answers that came while no request was awaited,
// and gives up an asynchronous request unanswered for stealReplyTimeout.
func (c *cluster) drainReplies(async *outstanding) {
	for {
		select {
		case s := <-c.replyc:
			async.answered(s)
			continue
		default:
		}
		break
	}
	if async.seq != 0 && time.Since(async.since) > stealReplyTimeout {
		async.seq = 0
	}
}

// awaitReply waits for the answer to steal request seq and reports whether
// it brought a thread; an answer to the asynchronous request meanwhile
// ends that one.
func (c *cluster) awaitReply(seq uint32, async *outstanding) bool {
	timer := time.NewTimer(stealReplyTimeout)
	defer timer.Stop()
	for {
		select {
		case s := <-c.replyc:
			async.answered(s)
			if s&^(1<<31) == seq {
				return s&(1<<31) != 0
			}
		case <-timer.C:
			return false
		case <-c.ctx.Done():
			return false
		}
	}
}

func (c *cluster) answered(seq uint32, got bool) {
	if got {
		seq |= 1 << 31
	}
	select {
	case c.replyc <- seq:
	default:
	}
}

func (c *cluster) receiver() {
	defer c.wg.Done()
	t := c.node.Thread(c.svc)
	for {
		// The receive is ended by a message (close), not by cancelling
		// it: a receive withdrawn just as a message completes it is a
		// window this loop does not need to open.
		m, err := t.Recv(context.Background(), pcor.Any, pcor.AnyTag)
		if err != nil {
			if c.ctx.Err() != nil || errors.Is(err, pcor.ErrClosed) {
				return
			}
			continue
		}
		if m.Tag == tagStop && m.Src.Proc == c.rt.proc {
			return
		}
		c.bytesIn.Add(uint64(len(m.Data)))
		c.handle(m)
		// A thread the message made ready (a joiner of a result, a VP
		// given a thread, a thread started in a goroutine of its own)
		// waits on this goroutine's processor: let it run now, before
		// this goroutine drives the port again, rather than wait for
		// another OS thread to be woken to take it from there.
		runtime.Gosched()
	}
}

func (c *cluster) handle(m pcor.Message) {
	rt := c.rt
	switch m.Tag {
	case tagSteal:
		var req stealReq
		if req.decode(m.Data) != nil {
			c.malformed.Add(1)
			return
		}
		c.stealsServed.Add(1)
		t := rt.pool.give(func(t *task) bool { return c.pol.Allow(req.thief, c.info(t)) })
		if t != nil && slices.Contains(c.live(), req.thief) {
			c.handOut(t, req.thief, req.seq, 0)
			return
		}
		if t != nil { // the thief is gone meanwhile
			t.state.Store(stateReady)
			rt.pool.put(t)
		}
		if req.hops < maxForwardHops {
			if next, ok := c.pol.Forward(StealQuery{Self: rt.proc, Thief: req.thief, Procs: c.live(), Hops: int(req.hops)}); ok && next != rt.proc && next != req.thief {
				req.hops++
				c.send(next, tagSteal, req.append(nil))
				return
			}
		}
		if !req.async {
			// A thief waiting for answers is fed the next thread
			// offered; one that went on asking (an asynchronous
			// request) gets only the answer, or it could be given a
			// thread by two processes for one request.
			c.mu.Lock()
			c.hungry[req.thief] = time.Now()
			c.mu.Unlock()
		}
		c.send(req.thief, tagNoWork, noWork{seq: req.seq, held: !req.async}.append(nil))
	case tagNoWork:
		var nw noWork
		if nw.decode(m.Data) != nil {
			c.malformed.Add(1)
			return
		}
		if nw.held {
			c.mu.Lock()
			c.heldBy[m.Src.Proc] = time.Now()
			c.mu.Unlock()
		}
		c.answered(nw.seq, false)
	case tagTask:
		var tm taskMsg
		if tm.decode(m.Data) != nil {
			c.malformed.Add(1)
			return
		}
		c.accept(tm)
	case tagResult:
		var rm resultMsg
		if rm.decode(m.Data) != nil {
			c.malformed.Add(1)
			return
		}
		c.result(m.Src.Proc, rm)
	case tagWhere:
		if len(m.Data) != 8 {
			c.malformed.Add(1)
			return
		}
		c.answerWhere(origin{proc: m.Src.Proc, key: binary.LittleEndian.Uint64(m.Data)})
	case tagStarted:
		if len(m.Data) != 12 {
			c.malformed.Add(1)
			return
		}
		key := binary.LittleEndian.Uint64(m.Data)
		id := pcor.ThreadID(binary.LittleEndian.Uint32(m.Data[8:]))
		c.mu.Lock()
		t := c.outst[key]
		c.mu.Unlock()
		if t != nil && t.started != nil {
			select {
			case <-t.started:
			default:
				t.addr = pcor.Addr{Proc: m.Src.Proc, Thread: id}
				close(t.started)
			}
		}
	case tagDone:
		if m.Src.Proc != 0 || len(m.Data) != 0 {
			c.malformed.Add(1)
			return
		}
		ev, _ := json.Marshal(rt.traceEvents())
		ctx, cancel := context.WithTimeout(c.ctx, sendTimeout)
		c.node.Thread(c.svc).Send(ctx, m.Src, tagTrace, ev)
		cancel()
		c.finish()
	case tagTrace:
		var ev []chromeEvent
		if json.Unmarshal(m.Data, &ev) != nil {
			c.malformed.Add(1)
		}
		c.mu.Lock()
		c.traceFrom[m.Src.Proc] = ev
		c.mu.Unlock()
		select {
		case c.traceWait <- m.Src.Proc:
		default:
		}
	default:
		c.malformed.Add(1)
	}
}

// accept starts a thread another process handed over.
func (c *cluster) accept(tm taskMsg) {
	rt := c.rt
	from := &origin{proc: tm.owner, key: tm.key}
	fail := func(err error) {
		c.send(tm.owner, tagResult, resultMsg{key: tm.key, status: resultErr, payload: []byte(err.Error())}.append(nil))
	}
	if tm.seq != 0 {
		defer c.answered(tm.seq, true)
		c.stealsGot.Add(1)
	}
	if tm.flags&flagSpawn == 0 {
		// The owner forgot this process as hungry when it handed the
		// thread over; the thief, if waiting, looks again. (A thread
		// placed here runs in a goroutine of its own, not on the VPs:
		// the owner still holds this process as hungry.)
		c.mu.Lock()
		delete(c.heldBy, tm.owner)
		c.mu.Unlock()
		select {
		case c.fed <- struct{}{}:
		default:
		}
	}
	if int(tm.fn) >= len(rt.funcs) {
		fail(fmt.Errorf("athread: no function %d", tm.fn))
		return
	}
	t, err := rt.funcs[tm.fn].spawn(tm.in)
	if err != nil {
		fail(err)
		return
	}
	t.rt = rt
	t.depth = tm.depth
	t.attr = Attr{Cost: tm.cost, Idempotent: tm.flags&flagIdempotent != 0}
	t.from = from
	ctx, cancel := context.WithCancel(rt.base)
	t.ctx = ctx
	t.cleanup = cancel
	if rt.rec != nil {
		rt.rec.fork(nil, t)
	}
	if tm.flags&flagSpawn != 0 {
		t.attr.Place = OnProc
		t.endpt = rt.node.NewThread()
		id := t.endpt.Addr().Thread
		c.mu.Lock()
		c.placed[*from] = id
		_, asked := c.asked[*from]
		delete(c.asked, *from)
		c.mu.Unlock()
		if asked {
			c.sendStarted(*from, id)
		}
		rt.runOwnGoroutine(t)
		return
	}
	// The VP woken is queued on this goroutine's processor: the receiver
	// lets it run at once (see receiver).
	rt.inject(t)
}

// reply sends the outcome of a thread that came from another process back
// to its owner.
func (c *cluster) reply(t *task, err error) {
	rm := resultMsg{key: t.from.key}
	var perr *PanicError
	switch {
	case err == nil:
		out, perr2 := t.self.packOut(nil)
		if perr2 != nil {
			rm.status, rm.payload = resultErr, []byte("packing the output: "+perr2.Error())
		} else {
			rm.payload = out
		}
	case errors.As(err, &perr):
		rm.status, rm.payload = resultPanic, []byte(fmt.Sprintf("%v\n%s", perr.Value, perr.Stack))
	default:
		rm.status, rm.payload = resultErr, []byte(err.Error())
	}
	if t.attr.Place == OnProc && t.endpt != nil {
		// Its owner learns the endpoint with the result, unless it
		// asked for it before (tagWhere).
		rm.placed, rm.thread = true, t.endpt.Addr().Thread
		c.mu.Lock()
		delete(c.placed, *t.from)
		c.mu.Unlock()
	}
	c.resultsOut.Add(1)
	// Posted without waiting for the owner to accept it, from every kind
	// of thread (a thread of its own goroutine too): a blocking send would
	// keep the goroutine until the owner's acknowledgement, which comes
	// alone and late when the owner has nothing else to send back, and
	// wake it for that.
	c.send(t.from.proc, tagResult, rm.append(nil))
}

// result completes a thread of this process that ran elsewhere.
func (c *cluster) result(from pcor.ProcID, rm resultMsg) {
	c.mu.Lock()
	t := c.outst[rm.key]
	if t != nil && t.at == from {
		delete(c.outst, rm.key)
	} else {
		t = nil
	}
	c.mu.Unlock()
	if t == nil {
		return
	}
	c.resultsIn.Add(1)
	var err error
	switch rm.status {
	case resultOK:
		if uerr := t.self.unpackOut(rm.payload); uerr != nil {
			err = fmt.Errorf("athread: unpacking the output of %q from process %d: %w", t.fn.name, from, uerr)
		}
	case resultPanic:
		err = &PanicError{Value: string(rm.payload), Proc: from}
	default:
		err = &RemoteError{Proc: from, Msg: string(rm.payload)}
	}
	if t.started != nil {
		select {
		case <-t.started:
		default:
			if rm.placed {
				t.addr = pcor.Addr{Proc: from, Thread: rm.thread}
			}
			close(t.started)
		}
	}
	c.rt.complete(t, err)
}

// where asks the process running t, a thread placed there (Place OnProc),
// for the address of t's endpoint, once: the answer (tagStarted) closes
// t.started. A thread placed on another process is not announced when it
// starts, which would cost a message for every such thread; its owner
// learns the endpoint when it asks, or with the result.
func (c *cluster) where(t *task) {
	if t.asked.Swap(true) {
		return
	}
	c.mu.Lock()
	key, at, ok := t.key, t.at, t.key != 0 && c.outst[t.key] == t
	c.mu.Unlock()
	if ok {
		c.send(at, tagWhere, binary.LittleEndian.AppendUint64(nil, key))
	}
}

// answerWhere answers an owner's tagWhere for thread o: at once if it runs
// here, when it comes if it has not come yet. (One that ended here already
// sent its endpoint with its result.)
func (c *cluster) answerWhere(o origin) {
	c.mu.Lock()
	id, ok := c.placed[o]
	if !ok {
		if len(c.asked) >= maxAsked {
			now := time.Now()
			for k, since := range c.asked {
				if now.Sub(since) > askedFor {
					delete(c.asked, k)
				}
			}
		}
		if len(c.asked) < maxAsked {
			c.asked[o] = time.Now()
		}
	}
	c.mu.Unlock()
	if ok {
		c.sendStarted(o, id)
	}
}

// sendStarted tells the owner of thread o the id of its endpoint here.
func (c *cluster) sendStarted(o origin, id pcor.ThreadID) {
	b := binary.LittleEndian.AppendUint64(nil, o.key)
	b = binary.LittleEndian.AppendUint32(b, uint32(id))
	c.send(o.proc, tagStarted, b)
}

// finish marks the end of the run in this process.
func (c *cluster) finish() { c.doneMu.Do(func() { close(c.done) }) }

func (c *cluster) remoteTrace() []chromeEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ev []chromeEvent
	for _, p := range slices.Sorted(maps.Keys(c.traceFrom)) {
		ev = append(ev, c.traceFrom[p]...)
	}
	return ev
}
