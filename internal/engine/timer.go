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
	t.timerAt = 0
	if t.failed != nil || t.idle() {
		p.mu.Unlock()
		return
	}
	last := p.lastHeard.Load()
	if t.pendingSince > last {
		last = t.pendingSince
	}
	if now-last > int64(e.cfg.UnreachableTimeout) {
		p.mu.Unlock()
		p.fail(&UnreachableError{Proc: p.proc, Reason: "no answer for " + time.Duration(now-last).Round(time.Millisecond).String()})
		return
	}
	if now < t.busyUntil {
		p.armTimerLocked(t.busyUntil, now)
		p.mu.Unlock()
		p.pump()
		return
	}
	expired := false
	var first uint64
	for i := 0; i < t.rlen; i++ {
		en := t.at(i)
		if en.sacked || en.need || en.sentAt == 0 {
			continue
		}
		if now-en.sentAt >= int64(t.rto) {
			if !expired {
				first = en.seq
			}
			en.need = true
			t.nNeed++
			expired = true
		}
	}
	if expired {
		if rt := p.ctrl(); rt != nil {
			rt.disp.c.timeouts.Add(1)
		}
		t.onLoss(first, true)
		t.rto *= 2
		if t.rto > e.cfg.MaxRTO {
			t.rto = e.cfg.MaxRTO
		}
	}
	next := now + int64(t.rto)
	if d := last + int64(e.cfg.UnreachableTimeout) + int64(time.Millisecond); d < next {
		next = d
	}
	p.armTimerLocked(next, now)
	p.mu.Unlock()
	p.pump()
}
