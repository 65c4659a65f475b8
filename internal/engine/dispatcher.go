package engine

import (
	"errors"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// port is one fabric port and its dispatcher.
type dispatcher struct {
	e    *Engine
	fab  fabric.Port
	mode Mode
	idx  int
	c    counters

	prog progress // who receives and handles: see progress.go

	// Receiving into place (placing.go): pl, the expectations told to
	// the port; placeGen, bumped by each withdrawal of them.
	pl       placingState
	placeGen atomic.Uint64

	// The reliable path (reliable.go): protected, the fabric protects
	// datagram bodies (data sent on the port, on either path, has its
	// header summed alone: wire.FlagBodyUnsummed, FlagReliable); holder, set when the port takes the path; holding,
	// a datagram was given back to the fabric for want of room; held, the
	// datagram just handled is to go back (used by the token holder).
	protected bool
	holder    fabric.Holder
	holding   atomic.Bool
	batching  atomic.Bool // a batch is being handled on a port with a holder (beginBatch)
	held      bool
	room      uint64 // Engine.room when the batch began
	// keepsDue: the holder handling the batch keeps the deadlines of
	// deferred acknowledgements (ackout.go), so it may defer them.
	keepsDue bool

	// Used only by the holder of the progress token.
	touched   []*peer
	wake      []match // receives to complete once the batch is acknowledged
	fwd       []fabric.Datagram
	fwdPorts  []*dispatcher
	delivered []*mcb
	busy      []busyReply
	refuse    []busyReply // fragments of messages larger than MaxMessage
	credit    int64       // receive budget taken ahead (dispatcher.reserve)
	ackBody   wire.AckBody
	carried   wire.AckBody // the acknowledgement a data datagram carries (handle); no blocks
	acked     batch        // the sends an acknowledgement completes (onAck): done, posted
	batchAt   int64        // when the batch being handled began (0: not yet read, see clock)
	lastDg    bool         // the datagram being handled is its batch's last (deferLoneLocked)
}

type busyReply struct {
	p *peer
	h wire.Header
}

// loop is the dispatcher: while it holds the port's progress token it
// receives batches of datagrams, handles each, then acknowledges once per
// peer per batch; while a thread drives the port it sleeps (see
// progress.go).
func (d *dispatcher) loop() {
	defer d.e.wg.Done()
	pr := &d.prog
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	idle := 0
	var idleSince int64 // polling: when the polls began to find nothing (0: they find datagrams)
	park := false       // polling: nothing received for pollIdle, park in the fabric
	for {
		if pr.waiter != nil && pr.state.Load() != tokDispatcher {
			if !d.reclaim(&t) {
				return
			}
			idle, idleSince, park = 0, 0, false
			continue
		}
		pr.drive.Lock()
		if pr.waiter != nil && pr.state.Load() != tokDispatcher {
			pr.drive.Unlock()
			continue
		}
		var k int
		var err error
		switch {
		case d.mode == Polling && !park:
			k, err = d.fab.Poll(pr.msgs)
			if k == 0 && err == nil {
				// The clock is read every few empty polls only: a
				// read can cost more than the poll.
				if idleSince == 0 || idle%8 == 0 {
					now := nanotime()
					d.e.flushAcks(now, false)
					if idleSince == 0 {
						idleSince = now
					}
					park = pr.waiter != nil && now-idleSince >= int64(pollIdle)
				}
				pr.drive.Unlock()
				if d.e.closed.Load() {
					return
				}
				idle++
				if idle%64 == 0 {
					runtime.Gosched()
				}
				continue
			}
			idle, idleSince = 0, 0
		case pr.waiter != nil:
			// Blocking, or polling with nothing received for pollIdle:
			// park until a datagram comes or a thread takes the token
			// (which interrupts a parked polling dispatcher: tryLead).
			if d.mode == Polling {
				pr.parked.Store(true)
				if pr.state.Load() != tokDispatcher {
					pr.parked.Store(false)
					pr.drive.Unlock()
					continue
				}
			}
			d.e.flushAcks(nanotime(), true) // nobody keeps their deadline while it sleeps
			k, err = pr.waiter.Park(pr.msgs)
			pr.parked.Store(false)
			idle, idleSince, park = 0, 0, false
		default:
			d.e.flushAcks(nanotime(), true)
			k, err = d.fab.Receive(pr.msgs)
		}
		if err != nil {
			pr.drive.Unlock()
			if d.e.closed.Load() || errors.Is(err, fabric.ErrClosed) {
				return
			}
			d.c.recvErrs.Add(1)
			time.Sleep(time.Millisecond)
			continue
		}
		if k > 0 {
			pr.dispatcherBatches.Add(1)
			d.keepsDue = d.mode == Polling
			d.handleBatch(pr.msgs[:k])
		}
		pr.drive.Unlock()
	}
}

var decodeDrop = map[error]int{
	wire.ErrShort:    DropShort,
	wire.ErrMagic:    DropMagic,
	wire.ErrVersion:  DropVersion,
	wire.ErrJobKey:   DropJobKey,
	wire.ErrChecksum: DropChecksum,
	wire.ErrLength:   DropLength,
	wire.ErrKind:     DropKind,
}

// clock is the time of the batch being handled, read at its first need.
func (d *dispatcher) clock() int64 {
	if d.batchAt == 0 {
		d.batchAt = nanotime()
	}
	return d.batchAt
}

// handle processes one received datagram of the batch being handled,
// reading the batch's time at its first need (clock).
func (d *dispatcher) handle(pkt []byte) {
	e := d.e
	d.c.fragsRecv.Add(1)
	var h wire.Header
	var body []byte
	var err error
	if x := d.placedFor(pkt); x != nil {
		// Its body was received in place (placing.go).
		d.pl.cur = x
		h, body = x.h, x.body
		d.c.bytesRecv.Add(uint64(len(pkt) + len(body)))
	} else {
		d.pl.cur = nil
		d.c.bytesRecv.Add(uint64(len(pkt)))
		if d.protected {
			body, err = wire.DecodeProtectedTo(&h, pkt, e.cfg.JobKey)
		} else {
			h, body, err = wire.Decode(pkt, e.cfg.JobKey)
		}
	}
	if err != nil {
		reason, ok := decodeDrop[err]
		if !ok {
			reason = DropLength
		}
		d.c.drops[reason].Add(1)
		return
	}
	if h.Flags&wire.FlagBodyUnsummed != 0 && !d.protected {
		// A body no fabric vouched for on its last hop.
		d.c.drops[DropChecksum].Add(1)
		return
	}
	if ProcID(h.DstProc) != e.cfg.Proc {
		d.forward(&h, pkt)
		return
	}
	p := e.peer(ProcID(h.SrcProc))
	if p == nil {
		if h.Flags&wire.FlagReliable != 0 && d.holdUnknown(&h) {
			return
		}
		if h.Kind == wire.Bye {
			return // the goodbye of a process already forgotten
		}
		d.c.drops[DropUnknownPeer].Add(1)
		return
	}
	if h.DstInc != 0 && h.DstInc != e.inc {
		// Addressed to an earlier run of this process.
		d.c.drops[DropStale].Add(1)
		p.owesAck()
		d.touch(p)
		return
	}
	if !p.checkInc(h.SrcInc) {
		d.c.drops[DropStale].Add(1)
		return
	}
	// The silence of a peer matters while a message from it is under
	// way: a whole message alone on the reliable path (one datagram, or
	// a bundle of them) reads no clock to say it was heard.
	if h.Flags&wire.FlagReliable == 0 || h.Flags&wire.FlagRendezvous != 0 ||
		h.Flags&wire.FlagBundle == 0 && (h.FragIndex != 0 || uint64(h.BodyLen) != h.Total) {
		p.lastHeard.Store(d.clock())
	}
	switch h.Kind {
	case wire.Data, wire.Abort:
		if e.dataPort.Load() != d {
			e.dataPort.Store(d) // where a receive from any process waits (progress.go)
		}
		if h.Flags&wire.FlagReliable != 0 {
			d.onReliableData(p, &h, body)
			return
		}
		if h.Flags&wire.FlagAck != 0 && h.AckCum > p.ackedCum.Load() {
			// Not a new AckBody: zeroing its selective blocks, which a
			// carried acknowledgement never has, cost more than the rest.
			a := &d.carried
			a.Cum, a.Window, a.NSack, a.Echo = h.AckCum, 0, 0, noEcho
			p.onAck(a, d, d.clock())
		}
		if h.Flags&wire.FlagBundle != 0 {
			d.onBundle(p, &h, body)
			return
		}
		d.onData(p, &h, body)
	case wire.Ack:
		a, err := wire.DecodeAck(body)
		if err != nil {
			d.c.drops[DropLength].Add(1)
			return
		}
		d.c.acksRecv.Add(1)
		p.onAck(&a, d, d.clock())
	case wire.Busy:
		d.c.busyRecv.Add(1)
		p.onBusy(h.Seq)
	case wire.Refuse:
		p.onRefuse(h.Seq, h.MsgID, int64(h.Total))
	case wire.Hello:
		p.owesAck()
		d.touch(p)
	case wire.Bye:
		if a, err := wire.DecodeAck(body); err == nil {
			d.c.acksRecv.Add(1)
			p.onAck(&a, d, d.clock())
		}
		e.onBye(p)
	}
}

func (d *dispatcher) touch(p *peer) {
	for _, q := range d.touched {
		if q == p {
			return
		}
	}
	d.touched = append(d.touched, p)
}

// flush sends the forwarded datagrams, acknowledgements and BUSY replies
// of a batch.
func (d *dispatcher) flush() {
	e := d.e
	if len(d.fwd) > 0 {
		d.flushForward()
	}
	for i, br := range d.refuse {
		if i > 0 && d.refuse[i-1].p == br.p && d.refuse[i-1].h.MsgID == br.h.MsgID {
			continue // one refusal per message and batch is enough
		}
		d.reply(br, wire.Refuse)
	}
	clear(d.refuse)
	d.refuse = d.refuse[:0]
	for _, br := range d.busy {
		if d.reply(br, wire.Busy) {
			d.c.busySent.Add(1)
		}
	}
	clear(d.busy)
	d.busy = d.busy[:0]
	if len(d.touched) == 0 {
		d.wakeAll()
		return
	}
	var b *batch // taken when an acknowledgement leaves (most are deferred or carried)
	var out *dispatcher
	now := d.clock()
	for _, p := range d.touched {
		rt := p.ctrl()
		if rt == nil {
			continue
		}
		p.rxmu.Lock()
		if !p.rx.ackPending {
			p.rxmu.Unlock()
			continue
		}
		if !p.rx.ackNow {
			// Wait a little for data going back to carry it: the reply
			// a waiting sender is likely to get, or any within the ack
			// delay.
			if p.rx.ackAsked && p.deferAckLocked(d.keepsDue, now) {
				p.rxmu.Unlock()
				d.c.acksDeferred.Add(1)
				continue
			}
			if !p.rx.ackAsked && e.cfg.AckDelay > 0 {
				p.armAckLocked()
				p.rxmu.Unlock()
				continue
			}
		}
		p.takeAckLocked(&d.ackBody)
		p.rxmu.Unlock()
		if b == nil {
			b = e.getBatch()
		}
		if out != nil && (out != rt.disp || b.full()) {
			e.transmit(out, b.dgs)
			b.reset()
		}
		out = rt.disp
		i := len(b.dgs)
		buf := b.heads[i][:]
		body := d.ackBody.Put(b.ackScratch(i))
		h := wire.Header{Kind: wire.Ack, JobKey: e.cfg.JobKey, SrcProc: uint32(e.cfg.Proc), DstProc: uint32(p.proc), Hops: wire.DefaultHops,
			SrcInc: e.inc, DstInc: p.inc.Load()}
		h.Encode(buf, body)
		b.dgs = append(b.dgs, fabric.Datagram{Head: buf, Body: body, To: rt.ep})
		d.c.acksSent.Add(1)
	}
	if b != nil {
		if out != nil && len(b.dgs) > 0 {
			e.transmit(out, b.dgs)
		}
		e.putBatch(b)
	}
	for i := 0; i < len(d.touched); i++ {
		d.touched[i] = nil // not clear(): see batch.reset
	}
	d.touched = d.touched[:0]
	d.wakeAll()
}

// wakeAll completes the receives matched during a batch. It runs after the
// batch's acknowledgements left, so a receiver that exits as soon as it has
// its message has already acknowledged it.
func (d *dispatcher) wakeAll() {
	for i, x := range d.wake {
		if x.r == nil {
			d.e.rndvAnswer(x.m) // a rendezvous withdrawal's answer
			d.wake[i] = match{}
			continue
		}
		if x.m == nil {
			x.r.complete(x.err)
			d.wake[i] = match{}
			continue
		}
		if x.m.owner == x.r && x.r.buf != nil {
			d.c.inPlace.Add(1)
		}
		d.e.fillFromMCB(x.r, x.m)
		d.wake[i] = match{}
	}
	d.wake = d.wake[:0]
}

// reply answers the fragment br.h from br.p with a control datagram of
// kind k (Busy or Refuse) naming it; a refusal carries MaxMessage in
// Total. It reports whether the reply left.
func (d *dispatcher) reply(br busyReply, k wire.Kind) bool {
	e := d.e
	rt := br.p.ctrl()
	if rt == nil {
		return false
	}
	h := wire.Header{Kind: k, JobKey: e.cfg.JobKey, SrcProc: uint32(e.cfg.Proc), DstProc: uint32(br.p.proc),
		SrcThread: br.h.DstThread, DstThread: br.h.SrcThread, MsgID: br.h.MsgID, Seq: br.h.Seq, Hops: wire.DefaultHops,
		SrcInc: e.inc, DstInc: br.p.inc.Load()}
	if k == wire.Refuse {
		h.Total = uint64(e.cfg.MaxMessage)
	}
	b := e.getBatch()
	head := b.heads[0][:]
	h.Encode(head, nil)
	b.dgs = append(b.dgs, fabric.Datagram{Head: head, To: rt.ep})
	e.transmit(rt.disp, b.dgs)
	e.putBatch(b)
	return true
}
