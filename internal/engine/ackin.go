package engine

import (
	"time"

	"github.com/pcor-go/pcor/internal/wire"
)

// dupAckThreshold is how far the selective acknowledgements must reach
// past a fragment before it counts as lost (TCP's three duplicate acks).
const dupAckThreshold = 3

// The send side of a peer's stream hears back: acknowledgements (carried
// by an Ack datagram or piggybacked on data) retire fragments in flight,
// complete the messages they finish, detect loss from the selective blocks
// and open the congestion window; BUSY pauses the stream. The peer's mu is
// taken and released in onAck and onBusy alone.

// onAck applies an acknowledgement from the peer, received on port d at
// now (when its batch began), by the holder of d's progress token.
func (p *peer) onAck(a *wire.AckBody, d *dispatcher, now int64) {
	b := &d.acked
	p.mu.Lock()
	fastRetrans, undone := p.applyAckLocked(a, now, b)
	// With nothing in flight or queued there is nothing to pump (the
	// acknowledgement of a ping-pong's message, most often).
	idle := p.tx.idle()
	p.mu.Unlock()
	if fastRetrans {
		d.c.fastRetrans.Add(1)
	}
	if undone {
		d.c.undos.Add(1)
	}
	if b.posted > 0 {
		d.c.msgsSent.Add(b.posted)
		b.posted = 0
	}
	for i, r := range b.done {
		if r.complete(nil) {
			d.c.msgsSent.Add(1)
		}
		b.done[i] = nil
	}
	b.done = b.done[:0]
	if !idle {
		p.pump()
	}
}

// applyAckLocked applies a to the send stream; the messages it completes
// are added to b.done. It reports whether a showed a loss that is
// retransmitted at once, and whether it showed the last retransmission
// timeout spurious and undid it. p.mu is held.
func (p *peer) applyAckLocked(a *wire.AckBody, now int64, b *batch) (fastRetrans, undone bool) {
	e := p.e
	t := &p.tx
	if a.Window > 0 {
		t.peerWin = int(a.Window)
	}
	if en := t.find(a.Echo); en != nil && !en.retrans && !en.sacked && en.sentAt != 0 && (en.seq < a.Cum || inSack(a, en.seq)) {
		t.sampleRTT(time.Duration(now-en.sentAt), e.cfg.MinRTO, e.cfg.MaxRTO)
	}
	if a.Cum > p.ackedCum.Load() {
		p.ackedCum.Store(a.Cum)
	}
	newly, spurious := p.ackCumulativeLocked(a.Cum, b)
	n, highest, sp := p.ackSelectiveLocked(a, b)
	newly += n
	if highest > t.sackHigh {
		t.sackHigh = highest
	}
	// Before the holes are looked at, so that a loss the timeout hid
	// counts against the window put back.
	undone = t.undoTimeout(spurious || sp, a.Cum)
	if a.NSack > 0 {
		fastRetrans = p.detectLossLocked(now)
	}
	if newly > 0 {
		t.progressAt, t.probes = now, 0
		t.busyDelay = time.Millisecond
		// No growth past what the window may use.
		t.onAcked(newly, float64(t.capped(e.cfg.Window)))
		t.resetBackoff(e.cfg.MinRTO, e.cfg.MaxRTO)
	}
	return fastRetrans, undone
}

// ackCumulativeLocked retires the fragments below cum and returns how many
// of them were newly acknowledged, and whether one of those was taken as
// lost by a timeout and not sent again since. p.mu is held.
func (p *peer) ackCumulativeLocked(cum uint64, b *batch) (newly int, timedOut bool) {
	t := &p.tx
	for t.rlen > 0 {
		en := t.at(0)
		if en.seq >= cum {
			break
		}
		if !en.sacked {
			newly++
			timedOut = timedOut || en.timedOut
			p.ackedLocked(en, b)
		}
		t.pop()
	}
	return newly, timedOut
}

// ackSelectiveLocked marks the fragments in a's selective blocks. It
// returns how many were newly acknowledged, the highest sequence number
// acknowledged, and whether a fragment newly acknowledged was taken as
// lost by a timeout and not sent again since. p.mu is held.
func (p *peer) ackSelectiveLocked(a *wire.AckBody, b *batch) (newly int, highest uint64, timedOut bool) {
	t := &p.tx
	highest = a.Cum
	for i := 0; i < int(a.NSack); i++ {
		blk := a.Sack[i]
		for s := blk.Start; s < blk.End; s++ {
			en := t.find(s)
			if en == nil {
				if t.rlen == 0 || s >= t.at(0).seq+uint64(t.rlen) {
					break
				}
				continue
			}
			if !en.sacked {
				en.sacked = true
				t.nSacked++
				newly++
				timedOut = timedOut || en.timedOut
				en.timedOut = false
				p.ackedLocked(en, b)
				if en.need {
					en.need = false
					t.nNeed--
				}
			}
		}
		if blk.End > highest {
			highest = blk.End
		}
	}
	return newly, highest, timedOut
}

// detectLossLocked marks for retransmission the holes the selective
// acknowledgements show, and has the timer look again at those too young
// to count yet: no later acknowledgement may come to show them again (the
// last fragments of a window, or of a stream that stops). It reports
// whether a loss was found. p.mu is held.
func (p *peer) detectLossLocked(now int64) bool {
	t := &p.tx
	l := t.markLost(t.sackHigh, now)
	if l.recheck != 0 {
		p.armTimerLocked(l.recheck, now)
	}
	if l.n == 0 {
		return false
	}
	t.onFastLoss(l.first, l.n, l.burst)
	return true
}

// losses are the fragments one look at the selective acknowledgements
// found lost.
type losses struct {
	first   uint64 // the first of them
	n       int    // how many
	burst   int    // the longest run of consecutive sequence numbers among them
	recheck int64  // when the first hole too young to count becomes old enough (0: none)
}

// markLost marks for retransmission the fragments that the selective
// acknowledgements passed by dupAckThreshold or more (highest is the end of
// the highest block), that were sent no later than a fragment since
// acknowledged, and at least a smoothed round trip ago: a younger hole may
// be a fragment overtaken on the way. (A fragment sent again is passed
// only by fragments sent after it: those that passed its first
// transmission say nothing about the second, which may be on its way.)
func (t *txStream) markLost(highest uint64, now int64) (l losses) {
	run := 0
	for i := 0; i < t.rlen; i++ {
		en := t.at(i)
		if en.seq+dupAckThreshold >= highest {
			break
		}
		if en.sacked || en.need || en.sentAt == 0 || en.sentAt > t.deliveredAt {
			run = 0
			continue
		}
		if at := en.sentAt + int64(t.srtt); now < at {
			if l.recheck == 0 || at < l.recheck {
				l.recheck = at
			}
			run = 0
			continue
		}
		if l.n == 0 {
			l.first = en.seq
		}
		l.n++
		run++
		l.burst = max(l.burst, run)
		en.need = true
		t.nNeed++
	}
	return l
}

func inSack(a *wire.AckBody, seq uint64) bool {
	for i := 0; i < int(a.NSack); i++ {
		if seq >= a.Sack[i].Start && seq < a.Sack[i].End {
			return true
		}
	}
	return false
}

// ackedLocked counts fragment en as delivered. p.mu is held. A posted
// send completes here (nobody waits for it), so that its entry leaving the
// stream afterwards frees it.
func (p *peer) ackedLocked(en *txEntry, b *batch) {
	if en.sentAt > p.tx.deliveredAt {
		p.tx.deliveredAt = en.sentAt
	}
	if en.kind != wire.Data || en.req == nil {
		return
	}
	r := en.req
	r.acked++
	if r.acked == r.nfrag && !r.canceled {
		if r.pooled {
			if r.complete(nil) {
				b.posted++
			}
			return
		}
		b.done = append(b.done, r)
	}
}

// onBusy handles the peer's refusal of fragment seq for lack of resources:
// the stream pauses and the fragment is sent again later. It is not loss.
func (p *peer) onBusy(seq uint64) {
	now := nanotime()
	p.mu.Lock()
	t := &p.tx
	if en := t.find(seq); en != nil && !en.sacked && !en.need {
		en.need = true
		en.retrans = true
		t.nNeed++
	}
	if t.busyUntil < now {
		t.busyUntil = now + int64(t.busyDelay)
		t.busyDelay *= 2
		if t.busyDelay > 50*time.Millisecond {
			t.busyDelay = 50 * time.Millisecond
		}
	}
	p.armTimerLocked(t.busyUntil, now)
	p.mu.Unlock()
}

// onRefuse handles the peer's refusal of message msgID, fragment seq: the
// message is larger than the peer accepts (limit). The send fails with a
// TooLargeError, and its fragments in flight go again as aborts, so that
// the peer's stream passes over the message.
func (p *peer) onRefuse(seq, msgID uint64, limit int64) {
	p.mu.Lock()
	t := &p.tx
	en := t.find(seq)
	if en == nil || en.kind != wire.Data || en.msgID != msgID || en.req == nil {
		p.mu.Unlock()
		return
	}
	r := en.req
	if r.canceled || r.state.Load() != statePending {
		p.mu.Unlock()
		return
	}
	r.canceled = true
	if r.nextFrag < r.nfrag {
		t.queue.remove(r)
	}
	for i := 0; i < t.rlen; i++ {
		if en := t.at(i); en.req == r && en.kind == wire.Data {
			en.kind = wire.Abort
			if !en.sacked && !en.need {
				en.need = true
				t.nNeed++
			}
		}
	}
	p.mu.Unlock()
	r.complete(&TooLargeError{Proc: p.proc, Size: int64(len(r.data)), Limit: limit})
	p.pump()
}
