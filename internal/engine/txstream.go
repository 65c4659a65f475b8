package engine

import (
	"time"

	"github.com/pcor-go/pcor/internal/wire"
)

// txEntry is one fragment in flight: transmitted, not yet acknowledged.
type txEntry struct {
	seq     uint64
	req     *Request
	msgID   uint64
	frag    uint32
	kind    wire.Kind
	sentAt  int64
	retrans bool
	sacked  bool
	need    bool // due for (re)transmission
	// timedOut: taken as lost by a retransmission timeout and not sent
	// again since; an acknowledgement of it shows the timeout spurious.
	timedOut bool
}

// txStream is pCoR's send queue (section 5.2) for one peer: messages wait
// in FIFO order until the dispatcher cuts their fragments, and every
// fragment in flight points back at its message, so an acknowledgement
// updates the status of exactly that message.
type txStream struct {
	queue reqList // messages with fragments not yet cut
	// deferred messages of the reliable path wait in the queue for more
	// to bundle with, deferBytes their bytes and sub-headers (relbundle.go)
	deferred   int
	deferBytes int

	ring    []txEntry // in flight, ordered by seq, as a ring
	rhead   int
	rlen    int
	nNeed   int
	nSacked int

	nextSeq   uint64
	nextMsgID uint64

	cwnd       float64
	ssthresh   float64
	recoverSeq uint64
	// ssBounded: the first message's route bounded ssthresh (route.ssRoom)
	ssBounded bool
	// roomCap is the most fragments in flight that the peer's socket
	// buffer holds at the size of the message being sent (route.ssRoom;
	// 0: no bound): the window never grows past it (see window).
	roomCap    int
	lossRun    int    // fragments found lost in the current round trip
	lossRunEnd uint64 // the round trip ends with losses at or above this seq
	peerWin    int

	// sackHigh is the highest seq the selective acknowledgements reached
	// (+1): a hole below it that was too young to count as lost when the
	// acknowledgement came is looked at again by the timer.
	sackHigh uint64
	// deliveredAt is the latest transmission time of a fragment
	// acknowledged.
	deliveredAt int64
	// progressAt is when the stream last made progress: an acknowledgement
	// retired fragments, or fragments left with nothing in flight. probes
	// counts the tail probes since, the last at probedAt.
	progressAt int64
	probes     int
	probedAt   int64
	probeSeq   uint64 // a tail probe to send whatever the window (0: none)

	srtt, rttvar, rto time.Duration

	// undo keeps the congestion state from before a retransmission
	// timeout until the timeout proves spurious or right (see
	// undoTimeout); undoEnd is the end of the flight it took as lost (0:
	// nothing to undo).
	undo    congestion
	undoEnd uint64

	busyUntil    int64
	busyDelay    time.Duration
	pendingSince int64 // when work appeared with nothing outstanding (0: not read, see isend)

	timer   *time.Timer
	timerAt int64
	failed  error
}

func (t *txStream) init(e *Engine) {
	t.cwnd = initialCwnd
	t.ssthresh = float64(e.cfg.Window)
	t.ssBounded = false
	t.roomCap = 0
	t.peerWin = e.cfg.Window
	// MinRTO and MaxRTO bound the first timeout too, before any round
	// trip was measured.
	t.rto = min(max(initialRTO, e.cfg.MinRTO), e.cfg.MaxRTO)
	t.busyDelay = time.Millisecond
	t.ring = make([]txEntry, 64)
}

func (t *txStream) at(i int) *txEntry { return &t.ring[(t.rhead+i)%len(t.ring)] }

func (t *txStream) push(e txEntry) {
	if t.rlen == len(t.ring) {
		n := make([]txEntry, 2*len(t.ring))
		for i := 0; i < t.rlen; i++ {
			n[i] = *t.at(i)
		}
		t.ring, t.rhead = n, 0
	}
	t.ring[(t.rhead+t.rlen)%len(t.ring)] = e
	t.rlen++
	if e.req != nil {
		e.req.refs.Add(1)
	}
}

func (t *txStream) pop() {
	e := &t.ring[t.rhead]
	if e.sacked {
		t.nSacked--
	} else if e.need {
		t.nNeed--
	}
	if e.req != nil && e.req.refs.Add(-1) == 0 {
		e.req.free()
	}
	t.ring[t.rhead] = txEntry{}
	t.rhead = (t.rhead + 1) % len(t.ring)
	t.rlen--
}

// find returns the in-flight entry for seq, or nil.
func (t *txStream) find(seq uint64) *txEntry {
	if t.rlen == 0 {
		return nil
	}
	first := t.at(0).seq
	if seq < first || seq >= first+uint64(t.rlen) {
		return nil
	}
	return t.at(int(seq - first))
}

func (t *txStream) enqueue(r *Request) { t.queue.push(r) }

// pipe estimates the fragments in the network: in flight, neither
// selectively acknowledged nor presumed lost.
func (t *txStream) pipe() int { return t.rlen - t.nSacked - t.nNeed }

func (t *txStream) idle() bool { return t.rlen == 0 && t.queue.head == nil }

// sampleRTT folds one round-trip measurement into the estimator (RFC 6298).
func (t *txStream) sampleRTT(d time.Duration, minRTO, maxRTO time.Duration) {
	if d <= 0 {
		d = time.Microsecond
	}
	if t.srtt == 0 {
		t.srtt, t.rttvar = d, d/2
	} else {
		diff := t.srtt - d
		if diff < 0 {
			diff = -diff
		}
		t.rttvar = (3*t.rttvar + diff) / 4
		t.srtt = (7*t.srtt + d) / 8
	}
	t.rto = t.srtt + 4*t.rttvar
	if t.rto < minRTO {
		t.rto = minRTO
	}
	if t.rto > maxRTO {
		t.rto = maxRTO
	}
}

// resetBackoff undoes timeout backoff once new data is acknowledged.
func (t *txStream) resetBackoff(minRTO, maxRTO time.Duration) {
	if t.srtt == 0 {
		return
	}
	t.rto = t.srtt + 4*t.rttvar
	if t.rto < minRTO {
		t.rto = minRTO
	}
	if t.rto > maxRTO {
		t.rto = maxRTO
	}
}

// congestion is the state a retransmission timeout changes.
type congestion struct {
	cwnd, ssthresh float64
	recoverSeq     uint64
}

// onTimeout takes everything in flight and not selectively acknowledged
// as lost, first being the oldest of it: it is all due again, and the
// window restarts from minCwnd. The state from before is kept to be put
// back should the timeout prove spurious (see undo); of two timeouts in a
// row, the first's is kept.
func (t *txStream) onTimeout(first uint64) {
	for i := 0; i < t.rlen; i++ {
		if en := t.at(i); !en.sacked && !en.need && en.sentAt != 0 {
			en.need = true
			en.timedOut = !en.retrans // an acknowledgement of a fragment sent twice proves nothing
			t.nNeed++
		}
	}
	if t.undoEnd == 0 {
		t.undo = congestion{t.cwnd, t.ssthresh, t.recoverSeq}
	}
	t.undoEnd = t.nextSeq
	t.onLoss(first, true)
}

// undo handles an acknowledgement after a retransmission timeout;
// spurious is whether it acknowledged a fragment the timeout took as lost
// and that was not sent again since. That fragment's first transmission
// arrived: the timeout came from a late acknowledgement (a receiver or a
// sender held up for longer than the timeout, a queue deeper than it),
// not from loss, and what the window lost with it is put back, as TCP
// does on a spurious timeout (F-RTO, RFC 5682, with selective
// acknowledgements; the Eifel response, RFC 4015). Fragments still due
// from the timeout alone are in flight again; if one was lost after all,
// the selective acknowledgements show it as usual (and a burst of them
// shrinks the window again, from where it was). A timeout whose flight is
// acknowledged only through retransmissions stands. It reports whether it
// undid the timeout.
func (t *txStream) undoTimeout(spurious bool, cum uint64) bool {
	if t.undoEnd == 0 {
		return false
	}
	if !spurious {
		if cum >= t.undoEnd {
			t.undoEnd = 0
		}
		return false
	}
	t.undoEnd = 0
	for i := 0; i < t.rlen; i++ {
		if en := t.at(i); en.timedOut {
			en.timedOut = false
			if en.need {
				en.need = false
				t.nNeed--
			}
		}
	}
	t.cwnd = max(t.cwnd, t.undo.cwnd)
	t.ssthresh = max(t.ssthresh, t.undo.ssthresh)
	t.recoverSeq = t.undo.recoverSeq
	return true
}

// onLoss shrinks the congestion window once per window of data.
func (t *txStream) onLoss(seq uint64, timeout bool) {
	if seq < t.recoverSeq && !timeout {
		return
	}
	t.ssthresh = t.cwnd / 2
	if t.ssthresh < minCwnd {
		t.ssthresh = minCwnd
	}
	if timeout {
		t.cwnd = minCwnd
	} else {
		t.cwnd = t.ssthresh
	}
	t.recoverSeq = t.nextSeq
}

// Congestion shows as fragments lost back to back (a full queue drops
// everything that arrives while it is full) or as many lost in a round
// trip; a lossy link drops one now and then whatever the load. Only
// congestion shrinks the window.
const (
	burstLoss     = 3 // consecutive fragments lost
	lossTolerance = 8 // losses in a round trip above 1 in lossTolerance of the window
)

// onFastLoss takes n fragments that selective acknowledgements showed
// lost, the first being seq, burst of them at most in a row. They are
// retransmitted in any case; the window shrinks only when the round trip's
// losses look like congestion. Halving the window for every isolated
// random loss held a link that loses 1% of its frames at a window of about
// a dozen fragments, a third of its lossless throughput; halving it for
// three scattered losses found by one acknowledgement (acknowledgements
// come a batch of fragments apart, and a hole counts only once a round
// trip old) still halved it 17 to 26 times in a 64 MiB message over such a
// link, holding it at 40 to 80 fragments.
func (t *txStream) onFastLoss(seq uint64, n, burst int) {
	if seq >= t.lossRunEnd {
		t.lossRun, t.lossRunEnd = 0, t.nextSeq
	}
	t.lossRun += n
	if burst >= burstLoss || t.lossRun*lossTolerance > int(t.cwnd) {
		t.onLoss(seq, false)
	}
}

func (t *txStream) onAcked(n int, maxCwnd float64) {
	for i := 0; i < n; i++ {
		if t.cwnd < t.ssthresh {
			t.cwnd++
		} else {
			t.cwnd += 1 / t.cwnd
		}
	}
	if t.cwnd > maxCwnd {
		t.cwnd = maxCwnd
	}
}

// window is the most fragments the stream may have in flight now: the
// congestion window, bounded by the room of the peer's socket buffer.
// Congestion avoidance grows the window until a loss, and on loopback the
// only loss is the receive buffer overflowing: without the bound every
// such overflow cost a burst of drops, their retransmissions and now and
// then a retransmission timeout.
func (t *txStream) window() int {
	return t.capped(int(t.cwnd))
}

// capped is n fragments, at most roomCap when that bounds the window.
func (t *txStream) capped(n int) int {
	if t.roomCap > 0 && n > t.roomCap {
		return t.roomCap
	}
	return n
}
