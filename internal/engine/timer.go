package engine

import "time"

// armTimerLocked makes sure the peer's timer fires no later than at. p.mu is held.
func (p *peer) armTimerLocked(at, now int64) {
	t := &p.tx
	if t.timerAt != 0 && t.timerAt <= at {
		return
	}
	d := time.Duration(at - now)
	if d < 0 {
		d = 0
	}
	t.timerAt = at
	if t.timer == nil {
		t.timer = time.AfterFunc(d, p.onTimer)
		return
	}
	t.timer.Reset(d)
}

// maxProbes is the most tail probes between two progresses of a stream.
const maxProbes = 2

// probeAt is when the stream is due for a tail probe (0: not due for one):
// the probe timeout (two smoothed round trips and the receiver's
// acknowledgement delay) after its last progress, if that comes before the
// retransmission timeout, and once more twice as long after that. A probe
// sends the last fragment in flight again, which the receiver acknowledges
// at once: if the acknowledgement of the window was lost, or the window's
// last fragments (which no later fragment's acknowledgement would show
// lost), the answer tells the sender so within a few round trips, and the
// window need not collapse to a timeout. (A probe may go before the
// acknowledgement it stands in for is lost, when the receiver was slow:
// the second covers it.)
func (t *txStream) probeAt(ackDelay time.Duration) int64 {
	if t.rlen == 0 || t.srtt == 0 || t.probes >= maxProbes {
		return 0
	}
	pto := 2*t.srtt + max(ackDelay, 0)
	if pto >= t.rto {
		return 0
	}
	if t.probes == 0 {
		return t.progressAt + int64(pto)
	}
	return t.probedAt + 2*int64(pto)
}

// probeLocked marks the last fragment in flight for a tail probe, sent
// whatever the congestion window. It reports false if there is none (all
// acknowledged or due anyway); either way it counts as one.
func (t *txStream) probeLocked(now int64) bool {
	t.probes++
	t.probedAt = now
	for i := t.rlen - 1; i >= 0; i-- {
		en := t.at(i)
		if en.sacked || en.need || en.sentAt == 0 {
			continue
		}
		en.need = true
		t.nNeed++
		t.probeSeq = en.seq
		return true
	}
	return false
}

// onTimer retransmits what timed out, resumes after BUSY, and declares the
// peer unreachable after a silence of UnreachableTimeout.
func (p *peer) onTimer() {
	e := p.e
	if e.closed.Load() {
		return
	}
	now := nanotime()
	p.mu.Lock()
	t := &p.tx
	due := t.timerAt
	t.timerAt = 0
	if t.failed != nil || t.idle() {
		p.mu.Unlock()
		return
	}
	p.resumed(due, now)
	if t.pendingSince == 0 {
		// Work queued on the reliable path (whose time isend does not
		// read) went to the datagram path: its silence counts from now.
		t.pendingSince = now
	}
	last := p.lastHeard.Load()
	if t.pendingSince > last {
		last = t.pendingSince
	}
	judge := last + int64(e.cfg.UnreachableTimeout) // when the silence is judged next
	if now > judge {
		if !e.ownStall(&p.txLooks) {
			p.mu.Unlock()
			p.fail(&UnreachableError{Proc: p.proc, Reason: "no answer for " + time.Duration(now-last).Round(time.Millisecond).String()})
			return
		}
		// The peer's answer may wait unread in this process's own port.
		judge = now + int64(e.lookAgain())
	} else if p.txLooks != nil {
		p.txLooks = nil
	}
	if now < t.busyUntil {
		p.armTimerLocked(t.busyUntil, now)
		p.mu.Unlock()
		p.pump()
		return
	}
	var c *counters
	if rt := p.ctrl(); rt != nil {
		c = &rt.disp.c
	}
	next := now + int64(t.rto)
	// Holes the last acknowledgements showed, now old enough to be lost.
	fast := t.sackHigh != 0 && p.detectLossLocked(now)
	if fast && c != nil {
		c.fastRetrans.Add(1)
	}
	// The retransmission timeout runs from the oldest transmission in
	// flight. When it expires, everything in flight and not selectively
	// acknowledged is taken as lost (onTimeout): the window restarts from
	// minCwnd, and fragments left counted in flight would hold it shut (over a lossy
	// link it stayed shut, nothing sent, for about a second while a few
	// thousand fragments timed out in turn).
	var oldest int64
	var first uint64
	for i := 0; i < t.rlen; i++ {
		en := t.at(i)
		if en.sacked || en.need || en.sentAt == 0 {
			continue
		}
		if oldest == 0 || en.sentAt < oldest {
			oldest, first = en.sentAt, en.seq
		}
	}
	expired := oldest != 0 && now-oldest >= int64(t.rto)
	if expired {
		t.onTimeout(first)
		oldest = 0
		if c != nil {
			c.timeouts.Add(1)
		}
		t.probes = maxProbes // what timed out goes again: no probe until progress
		t.rto *= 2
		if t.rto > e.cfg.MaxRTO {
			t.rto = e.cfg.MaxRTO
		}
	} else if at := t.probeAt(e.cfg.AckDelay); !fast && at != 0 && now >= at && t.probeLocked(now) {
		if c != nil {
			c.probes.Add(1)
		}
	}
	if oldest != 0 {
		next = min(next, oldest+int64(t.rto))
	}
	if at := t.probeAt(e.cfg.AckDelay); at != 0 {
		next = min(next, max(at, now))
	}
	next = min(next, judge+int64(time.Millisecond))
	p.armTimerLocked(next, now)
	p.mu.Unlock()
	p.pump()
}
