package engine

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/osyield"
	"github.com/pcor-go/pcor/internal/tally"
)

// Caller-driven progress.
//
// Each port has one progress token: whoever holds it receives and handles
// the port's datagrams. A thread blocked in Wait (Send, Recv) whose
// message comes through the port takes the token and drives the port
// itself, so that the datagram that completes its request is read by the
// thread that waits for it: no hand-over to another thread, which on a
// machine whose idle CPUs halt costs tens of microseconds per wake-up.
// When the driving thread's request completes it lets go of the token: the
// port is then unattended until the next thread takes it, or until the
// dispatcher goroutine takes it back after grace (so an application that
// stops calling in still gets its acknowledgements sent and its
// forwarding done). The dispatcher holds the token whenever no thread
// drives the port and sleeps in the fabric; an idle node burns nothing.
// Threads that find the port driven by another wait on their request as
// before; a driver that leaves while others wait hands the token to the
// dispatcher at once.
//
// Only fabrics that implement fabric.Waiter can be driven by callers; on
// the others the dispatcher always holds the token.

// Token holders.
const (
	tokDispatcher int32 = iota // the dispatcher goroutine
	tokFree                    // nobody: the port is unattended
	tokThread                  // a waiting thread drives the port
)

// progressGrace is how long a port may stay unattended before the
// dispatcher takes the token back (a variable for the benchmarks, which
// count a round trip's instructions with no dispatcher waking).
var progressGrace = time.Millisecond

const (
	// driveSpin is how long a driving thread polls the fabric before it
	// sleeps in it (blocking mode): the answer to a message often comes
	// within it, and polling costs no wake-up. Between two empty polls
	// the thread gives its CPU to any other runnable thread
	// (sched_yield): the thread that is to answer may be waiting for this
	// very CPU, and a spin that kept it off would end each wait only when
	// the spin ran out (a round trip of two whole spins, a state that
	// holds once entered). The spin outlasts a wake-up of an idle CPU
	// (40-55 µs where the hypervisor does not poll for its guest), so
	// that a wait for a peer that slept does not end in a sleep too.
	driveSpin = 100 * time.Microsecond
	// flowPace is the longest a driving thread waits between two empty
	// polls while batches flow (blocking mode, see flow): it waits as
	// long as the batches have been coming apart, up to flowPace, on its
	// CPU, having yielded it once.
	flowPace = 25 * time.Microsecond
	// yieldRan is how long a yield with nothing else to run never takes
	// (about 0.5 µs here): one that took longer ran another thread, which
	// wanted the CPU (see flow).
	yieldRan = 5 * time.Microsecond
	// driveSlice bounds each sleep of a driving thread in the fabric, so
	// that it notices its context ending and does not hold its share of
	// GOMAXPROCS for long.
	driveSlice = time.Millisecond
	// driveIdle is how long a driving thread waits for its message before
	// it gives the port back to the dispatcher and waits like the others.
	driveIdle = 20 * time.Millisecond
	// pollIdle is how long a polling dispatcher polls a port that receives
	// nothing before it parks in the fabric as a blocking one does, until
	// the next datagram: an idle node sleeps in the kernel in either mode,
	// and a dispatcher polling an unused port does not take a processor
	// from the threads of the process (messages between threads of one
	// process never touch the port). A thread that waits for a message
	// through the port drives it itself, polling, meanwhile.
	pollIdle = 10 * time.Millisecond
)

// progress is the token of one port and what its holders share.
type progress struct {
	waiter   fabric.Waiter // nil: the port cannot be driven by callers
	state    atomic.Int32
	waiters  waiterCount // threads waiting on their request for this port
	sleeping atomic.Bool // the driving thread sleeps in the fabric
	parked   atomic.Bool // a polling dispatcher parks in the fabric (pollIdle)
	nudge    chan struct{}

	// drive is held by whoever receives and handles datagrams: the
	// dispatcher for each batch, a driving thread while it drives.
	drive sync.Mutex
	msgs  [][]byte // receive slots, guarded by drive
	// seenLeads and seenAt: the count of leads when the dispatcher last
	// found the port unattended with a count it had not seen, and when
	// (reclaim; used by the dispatcher alone).
	seenLeads uint64
	seenAt    int64

	// Counters (PortStats): leads, tokens taken by a waiting thread (of
	// which steals, from the dispatcher); handbacks, a leaving driver gave
	// the token to the dispatcher for others that wait; giveBacks, a
	// driver waited driveIdle and gave up; reclaims, the dispatcher took
	// an unattended port back after progressGrace; threadBatches and
	// dispatcherBatches, non-empty batches handled by each kind of holder;
	// sleeps, a driver's spin ran out and it slept in the fabric.
	leads, steals, handbacks, giveBacks, reclaims atomic.Uint64
	threadBatches, dispatcherBatches              tally.Counter // under drive
	sleeps                                        atomic.Uint64
}

// drivers counts the threads driving a port in driveFor, in all the
// engines of the process.
var drivers atomic.Int32

// gomaxprocs is GOMAXPROCS as a driver last read it; procsAge counts the
// drives, so that it is read again every 256th (runtime.GOMAXPROCS takes
// the scheduler's lock).
var (
	gomaxprocs atomic.Int32
	procsAge   atomic.Uint32
)

// crowdedDriver counts the caller as a thread spinning on a port and
// reports whether the process has as many as processors: then the
// goroutine that is to answer may wait for the caller's processor, which
// the caller gives up at every pass of its spin. The caller calls
// drivers.Add(-1) when it stops.
func crowdedDriver() bool {
	if procsAge.Add(1)%256 == 1 {
		gomaxprocs.Store(int32(runtime.GOMAXPROCS(0)))
	}
	return drivers.Add(1) >= gomaxprocs.Load()
}

// snapshot copies the progress counters into s.
func (pr *progress) snapshot(s *PortStats) {
	s.Leads = pr.leads.Load()
	s.Steals = pr.steals.Load()
	s.Handbacks = pr.handbacks.Load()
	s.GiveBacks = pr.giveBacks.Load()
	s.Reclaims = pr.reclaims.Load()
	s.ThreadBatches = pr.threadBatches.Load()
	s.DispatcherBatches = pr.dispatcherBatches.Load()
	s.DriverSleeps = pr.sleeps.Load()
}

func (pr *progress) init(fab fabric.Port) {
	if w, ok := fab.(fabric.Waiter); ok {
		pr.waiter = w
	}
	pr.nudge = make(chan struct{}, 1)
	n := fab.BatchSize()
	if n <= 0 {
		n = 1
	}
	pr.msgs = make([][]byte, n)
}

// wake makes the dispatcher look at the token.
func (pr *progress) wake() {
	select {
	case pr.nudge <- struct{}{}:
	default:
	}
}

// interrupt wakes a driving thread asleep in the fabric.
func (d *dispatcher) interrupt() {
	if d.prog.sleeping.Load() {
		d.prog.waiter.Interrupt()
	}
}

// drivePort is the port a waiter of r would drive, or nil when r does not
// wait on a fabric (a message between threads of this process) or the
// port cannot be driven. It is found when r starts, before anyone else
// sees r.
func (e *Engine) drivePort(r *Request) *dispatcher {
	proc := r.srcProc
	if r.kind == sendReq {
		proc = r.dstProc
	}
	if proc == e.cfg.Proc {
		return nil
	}
	var d *dispatcher
	if proc != AnyProc {
		if p := e.peer(proc); p != nil {
			if rt := p.ctrl(); rt != nil {
				d = rt.disp
			}
		}
	} else {
		// A receive from any process drives the port data last came
		// through: its message most likely comes the same way (a
		// process whose peers all talk through shared memory would
		// otherwise drive its first port, loopback UDP, while the
		// message waited in shared memory for the dispatcher).
		d = e.dataPort.Load()
	}
	if d == nil {
		d = e.firstPort()
	}
	if d == nil || d.prog.waiter == nil {
		return nil
	}
	return d
}

func (e *Engine) firstPort() *dispatcher {
	if ps := e.portList.Load(); ps != nil && len(*ps) > 0 {
		return (*ps)[0]
	}
	return nil
}

// wait blocks until r completes or ctx ends, driving d when it can.
func (d *dispatcher) wait(r *Request, ctx context.Context) error {
	pr := &d.prog
	for {
		if r.state.Load() == stateDone {
			return r.err
		}
		if d.tryLead() {
			done, held, err := d.driveFor(ctx, r)
			if held {
				d.letGo()
			}
			if done {
				return err
			}
			// The message is long in coming: wait for it as a long
			// waiter (below).
			return r.chanWait(ctx)
		}
		// Someone else drives the port: wait on the request. Announce
		// the wait first, then look at the token again: a driver
		// leaving meanwhile either sees this waiter and hands the token
		// to the dispatcher, or leaves it unattended for this thread to
		// take.
		ep := pr.waiters.join()
		if pr.state.Load() == tokFree && r.state.Load() != stateDone {
			pr.waiters.leave(ep)
			continue
		}
		err := r.chanWait(ctx)
		pr.waiters.leave(ep)
		return err
	}
}

// waiterCount counts the threads waiting on their request for a port,
// each for driveIdle to twice that from when it began (a long waiter, see
// below, stops counting without a timer of its own, which at 1,000 threads
// meant a timer set and stopped, and a third case in the select, for
// every wait). The count is kept per period of driveIdle in two slots
// (period<<32 | count), the one of the period a wait began and the one of
// the period before; a slot is taken over, its count dropped, by the
// first wait two periods on, and a wait that ends after that leaves the
// new count alone.
type waiterCount struct {
	slot [2]atomic.Uint64
}

// waitPeriod is the period of driveIdle now.
func waitPeriod() uint64 { return uint64(nanotime()/int64(driveIdle)) & (1<<32 - 1) }

// join counts a wait beginning; leave(period) ends it.
func (w *waiterCount) join() uint64 {
	ep := waitPeriod()
	s := &w.slot[ep&1]
	for {
		v := s.Load()
		n := ep<<32 | 1
		if v>>32 == ep {
			n = v + 1
		}
		if s.CompareAndSwap(v, n) {
			return ep
		}
	}
}

func (w *waiterCount) leave(ep uint64) {
	s := &w.slot[ep&1]
	for {
		v := s.Load()
		if v>>32 != ep || v&(1<<32-1) == 0 {
			return
		}
		if s.CompareAndSwap(v, v-1) {
			return
		}
	}
}

// Load is the number of waits counted: begun in this period or the last.
func (w *waiterCount) Load() int32 {
	v0, v1 := w.slot[0].Load(), w.slot[1].Load()
	if (v0|v1)&(1<<32-1) == 0 {
		return 0 // nobody waits: no clock read
	}
	ep := waitPeriod()
	var n uint64
	for _, v := range [2]uint64{v0, v1} {
		if p := v >> 32; p == ep || p == (ep-1)&(1<<32-1) {
			n += v & (1<<32 - 1)
		}
	}
	return int32(n)
}

// A long waiter, one whose message has not come within driveIdle (a
// receive posted to learn of a peer's end, a server's receive from any
// process between requests), waits on its request without counting as a
// waiter of the port: a waiter keeps the token with the dispatcher while
// no thread drives, so that a long waiter would make every message through
// the port a hand-over from the dispatcher to the thread it is for, and a
// driver leaving gives the token to the dispatcher at once rather than
// leaving the port to the next thread that waits. Its own message, when it
// comes, is received by whoever holds the token then: a driving thread,
// or the dispatcher at once or within progressGrace.

// tryLead takes the token for the calling thread: from nobody, or from the
// dispatcher if no other thread waits on the port (those are served by the
// dispatcher; taking the token from it costs it a wake-up).
func (d *dispatcher) tryLead() bool {
	pr := &d.prog
	for {
		switch pr.state.Load() {
		case tokFree:
			if pr.state.CompareAndSwap(tokFree, tokThread) {
				pr.leads.Add(1)
				return true
			}
		case tokDispatcher:
			if pr.waiters.Load() > 0 {
				return false
			}
			if pr.state.CompareAndSwap(tokDispatcher, tokThread) {
				pr.leads.Add(1)
				pr.steals.Add(1)
				if d.mode == Blocking || pr.parked.Load() {
					pr.waiter.Interrupt() // the dispatcher leaves the fabric
				}
				return true
			}
		default:
			return false
		}
	}
}

// letGo gives up the token after driving: unattended, or to the
// dispatcher at once if other threads wait on the port.
func (d *dispatcher) letGo() {
	pr := &d.prog
	pr.state.Store(tokFree)
	if pr.waiters.Load() > 0 && pr.state.CompareAndSwap(tokFree, tokDispatcher) {
		pr.handbacks.Add(1)
		pr.wake()
	}
}

// giveBack hands the token to the dispatcher (a driver that waited too
// long). The driver may still hold drive: the dispatcher takes it once
// the driver lets go.
func (d *dispatcher) giveBack() {
	pr := &d.prog
	pr.state.Store(tokDispatcher)
	pr.giveBacks.Add(1)
	pr.wake()
}

// driveFor drives the port until r completes (done), ctx ends (done, with
// its error), or the message is long in coming (not done: the token went
// back to the dispatcher and the caller waits on r). held reports whether
// the caller still holds the token.
//
// The loop is in drive, which has no defer: with its many returns the
// compiler would not open-code them, and a defer not open-coded costs
// about 200 instructions a call (deferprocStack, deferreturn).
func (d *dispatcher) driveFor(ctx context.Context, r *Request) (done, held bool, err error) {
	pr := &d.prog
	pr.drive.Lock()
	defer pr.drive.Unlock()
	if d.mode == Blocking {
		// Completing r wakes this thread from the fabric (a polling
		// driver never sleeps in it: nothing to wake).
		r.driver.Store(d)
		defer r.driver.Store(nil)
	}
	// With as many drivers spinning in the process as it has processors
	// (two nodes of one process, or one driver at GOMAXPROCS=1), the
	// goroutine that is to answer may wait for this very processor: give
	// it up at every empty poll, not every 64th (osyield.Yield gives the CPU to
	// other threads, not the processor to other goroutines), or each leg
	// of a ping-pong between them lasts a whole spin.
	crowded := crowdedDriver()
	defer drivers.Add(-1)
	done, held, err = d.drive(ctx, r, crowded)
	return done, held, err
}

// flow is what a driving thread in blocking mode knows of the batches its
// wait received, for its spin. A wait that takes more than one batch
// (the fragments of a large message, the acknowledgements of a large
// send) is a stream: its thread keeps polling for driveSpin after each
// batch, rather than for driveSpin from the start of the wait only, and
// sleeps in the fabric only once the datagrams stop coming. A driver
// asleep in the fabric between the batches of a stream is woken by each
// datagram that comes while it sleeps: on a machine with idle CPUs the
// receiver of a 2 MiB stream (33 datagrams a message) slept 11 to 12
// times a message, every datagram it slept for cost the sending side a
// wake-up of the other CPU, and the sender, which does more of the work
// (the copy into the kernel and the loopback's delivery), was the slower
// side. While the batches flow, the thread polls about as often as they
// have been coming (the interval between its last two, at most
// flowPace), waiting on its CPU between two polls: an empty poll is two
// system calls (the poll and the yield), and one every microsecond or so
// took some 200 of them a message. It does not wait so after a yield
// that ran another thread (the CPU is wanted: it polls again at once, as
// in the spin); and it sleeps between batches as before when drivers
// crowd the processors, or when the batches come further apart than half
// driveSpin (a trickle is slept for).
type flow struct {
	last int64 // when the last batch came (0: none yet)
	gap  int64 // the interval between the last two (0: not known)
	end  int64 // the spin never passes it: the start of the wait and driveIdle
	off  bool  // drivers crowd the processors: no spin past driveSpin
}

// batch notes a batch that came at now and returns until when to spin,
// spinUntil being the end of the spin so far. The spin stops at f.end, so
// that a wait for a message long in coming still gives the port back to
// the dispatcher after driveIdle (the first sleep after it), however
// busy the port.
func (f *flow) batch(now, spinUntil int64) int64 {
	if f.last != 0 {
		f.gap = now - f.last
	}
	f.last = now
	if f.off || f.gap > int64(driveSpin)/2 {
		return spinUntil
	}
	return max(spinUntil, min(now+int64(driveSpin), f.end))
}

// next is when to poll again after an empty poll at now whose yield
// returned at t: at once (0) unless batches flow and the yield ran no
// other thread.
func (f *flow) next(now, t int64) int64 {
	if f.off || f.gap == 0 || t-now > int64(yieldRan) {
		return 0
	}
	return now + min(f.gap, int64(flowPace))
}

// pause follows an empty poll: it yields the CPU (see driveSpin) and,
// while batches flow, waits on it until the next poll is due (next).
func (f *flow) pause() {
	if f.gap == 0 {
		osyield.Yield()
		return
	}
	now := nanotime()
	osyield.Yield()
	t := nanotime()
	for until := f.next(now, t); t < until; t = nanotime() {
	}
}

// drive is driveFor's loop, pr.drive held.
func (d *dispatcher) drive(ctx context.Context, r *Request, crowded bool) (done, held bool, err error) {
	pr := &d.prog
	e := d.e
	var start, spinUntil int64 // blocking mode: a polling driver never sleeps
	f := flow{off: crowded}
	if d.mode == Blocking {
		start = nanotime()
		spinUntil = start + int64(driveSpin)
		f.end = start + int64(driveIdle)
	}
	for polls := 0; ; polls++ {
		if r.state.Load() == stateDone {
			return true, true, r.err
		}
		if e.closed.Load() {
			return false, true, nil
		}
		if polls%64 == 63 && ctx.Err() != nil {
			return true, true, ctx.Err()
		}
		var k int
		var err error
		// A polling driver reads the clock only for deferred
		// acknowledgements, and then every few empty polls: it has no
		// spin to end, and a clock read can cost more than an empty
		// poll (a shared-memory poll is a few loads).
		var now int64
		if d.mode == Blocking {
			now = nanotime()
		}
		if d.mode == Polling || now < spinUntil {
			k, err = d.fab.Poll(pr.msgs)
			if k == 0 && err == nil {
				if e.acks.due.Load() != 0 && (d.mode == Blocking || polls%8 == 0) {
					if d.mode == Polling {
						now = nanotime()
					}
					e.flushAcks(now, false)
				}
				if d.mode == Blocking {
					f.pause()
				}
				if polls%64 == 63 || crowded {
					runtime.Gosched()
				}
				continue
			}
		} else {
			if now-start > int64(driveIdle) {
				// A long wait: let the dispatcher serve it, holding no
				// thread.
				d.giveBack()
				return false, false, nil
			}
			if ctx.Err() != nil {
				return true, true, ctx.Err()
			}
			e.flushAcks(now, false)
			slice := driveSlice
			if due := e.acks.due.Load(); due != 0 {
				slice = min(slice, time.Duration(max(due-now, 0)))
			}
			pr.sleeping.Store(true)
			pr.sleeps.Add(1)
			if r.state.Load() == stateDone {
				pr.sleeping.Store(false)
				return true, true, r.err
			}
			k, err = pr.waiter.Wait(pr.msgs, time.Now().Add(slice))
			pr.sleeping.Store(false)
		}
		if err != nil {
			if e.closed.Load() {
				return false, true, nil
			}
			// A deadline (the slice ran out) or a fabric error: look again.
			continue
		}
		if k > 0 {
			pr.threadBatches.Add(1)
			d.keepsDue = true
			d.handleBatch(pr.msgs[:k])
			if d.mode == Blocking {
				spinUntil = f.batch(nanotime(), spinUntil)
			}
		}
	}
}

// handleBatch handles received datagrams and sends what they call for.
// The caller holds the token and drive.
func (d *dispatcher) handleBatch(msgs [][]byte) {
	// The clock is read at the first need (clock): a batch of whole
	// messages on the reliable path needs none, and a read costs more
	// than handling such a message.
	d.batchAt = 0
	d.beginBatch()
	for i := 0; i < len(msgs); i++ {
		d.lastDg = i == len(msgs)-1
		if d.handle(msgs[i]); d.held {
			for k := d.hold(i); k > 0; k-- {
				i++
				msgs[i] = nil // back in the fabric, received again later
			}
		}
		msgs[i] = nil
	}
	d.endBatch()
	d.expect() // where the next fragments go (placing.go)
	d.flush()
	if d.holder != nil {
		d.holder.Handled() // senders waiting on the reliable path see it taken
	}
}

// reclaim waits, as the dispatcher, until the token is the dispatcher's:
// given back, or left unattended for progressGrace. It reports false when
// the engine closes.
func (d *dispatcher) reclaim(t **time.Timer) bool {
	pr := &d.prog
	e := d.e
	for {
		e.flushAcks(nanotime(), false)
		var wait time.Duration
		switch pr.state.Load() {
		case tokDispatcher:
			return true
		case tokFree:
			// Unattended since the dispatcher first found it so with
			// the leads it counts now (no thread took the token since):
			// a driver letting go reads no clock for it, and the port
			// goes back after one to two graces unattended.
			now := nanotime()
			if l := pr.leads.Load(); l != pr.seenLeads || pr.seenAt == 0 {
				pr.seenLeads, pr.seenAt = l, now
			}
			idle := time.Duration(now - pr.seenAt)
			if idle >= progressGrace {
				if pr.state.CompareAndSwap(tokFree, tokDispatcher) {
					pr.reclaims.Add(1)
					return true
				}
				continue
			}
			wait = progressGrace - idle
			if due := e.acks.due.Load(); due != 0 {
				// Nobody keeps the deferred acknowledgements' deadline.
				wait = min(wait, time.Duration(max(due-nanotime(), 0)))
			}
		default:
			wait = progressGrace // the driving thread keeps the deadlines
		}
		if *t == nil {
			*t = time.NewTimer(wait)
		} else {
			(*t).Reset(wait)
		}
		select {
		case <-pr.nudge:
			(*t).Stop()
		case <-(*t).C:
		case <-e.closing:
			return false
		}
	}
}
