package engine

import "runtime"

// Spinning before blocking.
//
// A thread about to block on its request (chanWait) first checks it a few
// times, giving its processor to other goroutines in between, as long as
// fewer than GOMAXPROCS-1 others do the same. Between threads of one
// process the answer to a message often comes within a microsecond, from
// a goroutine running on another processor: the spin then ends without the
// thread parking and the answering one waking it, which costs more than
// the message. With a single processor, or all the others spinning, the
// thread blocks at once, so that spinners never keep the goroutine they
// wait for from running. Spins that end with the request still pending
// cost their yields for nothing (many threads each waiting for its own
// stream, answers slower than a spin): spinScore follows how spins end,
// and while more of the recent ones failed than succeeded only one wait
// in spinProbe spins, to notice when spinning pays again.

// waitSpins is how many times a thread checks its request, yielding
// between checks, before it blocks (each yield takes 0.1-0.3 µs).
const waitSpins = 16

// spinProbe: while spins fail, one wait in spinProbe spins; spinScoreMax
// bounds how far spinScore goes either way.
const (
	spinProbe    = 64
	spinScoreMax = 16
)

// spin reports whether r completed within a short spin.
func (r *Request) spin() bool {
	e := r.eng
	if e == nil || e.spinMax <= 0 {
		return false
	}
	if e.spinScore.Load() < 0 && e.spinTries.Add(1)%spinProbe != 0 {
		return false
	}
	if e.spinners.Add(1) > e.spinMax {
		e.spinners.Add(-1)
		return false
	}
	ok := false
	for range waitSpins {
		if ok = r.state.Load() == stateDone; ok {
			break
		}
		runtime.Gosched()
	}
	ok = ok || r.state.Load() == stateDone
	e.spinners.Add(-1)
	e.spunFor(ok)
	return ok
}

// spunFor moves spinScore toward how a spin ended.
func (e *Engine) spunFor(ok bool) {
	if s := e.spinScore.Load(); ok && s < spinScoreMax {
		e.spinScore.Add(1)
	} else if !ok && s > -spinScoreMax {
		e.spinScore.Add(-1)
	}
}
