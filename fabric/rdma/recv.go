package rdma

import (
	"errors"
	"os"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/verbs"
	"golang.org/x/sys/unix"
)

// The receive side keeps one shared receive queue (SRQ) topped up for
// every peer's queue pair: whoever reaps a receive completion (Receive,
// Poll, or a Send waiting for credit) moves the datagram to the ready
// queue, and its buffer goes back into the SRQ once the consumer is done
// with it (the next Receive or Poll, or Handled). The buffers a port keeps
// posted do not grow with its peers, so the number of peers is bounded by
// queue pairs and memory, not by the pool. A consumer that is itself
// blocked sending therefore never starves its peers of receive buffers
// (two dispatchers each waiting in Send for the other would otherwise
// deadlock). Only when the whole pool is held by unconsumed datagrams
// does a peer see receiver-not-ready, which is back-pressure, not loss.
//
// Credits. A peer may have at most the window it was told in the
// handshake (Config.RecvPerPeer) of datagrams received and not yet
// credited back; the receiver credits a datagram once it is reaped and
// not held. Credits travel in the immediate data of every SEND the other
// way, or, when none goes and half a window is owed, in a SEND of no
// bytes that only carries them (creditOnly). A sender with no credit
// waits (its Send blocks, as on a full send queue): so a held peer's
// sends stop after one window, and a stream never runs into
// receiver-not-ready while the pool has room.

type readyDg struct {
	c    *conn
	idx  int    // pool buffer, or -1: the bytes are b (a copy, see Hold)
	n    int    // length
	b    []byte // the copy when idx is -1
	held bool   // in lent: given back by Hold
}

// bytes is the datagram.
func (p *Port) bytesOf(r readyDg) []byte {
	if r.idx < 0 {
		return r.b
	}
	return p.recv.buf(r.idx)[:r.n]
}

// copyOutLocked returns r as a copy, its buffer going back to the SRQ
// unless lent (the consumer may still look at it until it is released).
// Runs under rxMu.
func (p *Port) copyOutLocked(r readyDg, lent bool) readyDg {
	if r.idx < 0 {
		return r
	}
	b := append([]byte(nil), p.recv.buf(r.idx)[:r.n]...)
	if !lent {
		p.repostLocked(r.idx)
	}
	return readyDg{c: r.c, idx: -1, n: r.n, b: b}
}

// Receive blocks until at least one datagram has arrived and stores up
// to len(msgs) of them. Each msgs[i] is a slice of a receive buffer, valid
// until the next Receive or Poll.
func (p *Port) Receive(msgs [][]byte) (int, error) {
	return p.receive(msgs, recvBlock, time.Time{})
}

// Poll is Receive without blocking.
func (p *Port) Poll(msgs [][]byte) (int, error) {
	return p.receive(msgs, recvPoll, time.Time{})
}

// How receive waits.
const (
	recvPoll  = iota // not at all
	recvBlock        // until a datagram comes (Receive)
	recvIntr         // until a datagram comes, Interrupt or the deadline (Wait, Park)
)

func (p *Port) receive(msgs [][]byte, how int, deadline time.Time) (int, error) {
	p.recvMu.Lock()
	defer p.recvMu.Unlock()
	if p.closed.Load() {
		return 0, fabric.ErrClosed
	}
	p.rxMu.Lock()
	p.releaseLentLocked()
	var gone []*conn
	if len(p.pendingGone) > 0 {
		gone = p.drainedGoneLocked()
	}
	p.rxMu.Unlock()
	for _, c := range gone {
		c.gone(c.goneErr)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	if how == recvPoll {
		n := p.deliver(msgs)
		p.pollIdle(n == 0)
		return n, nil
	}
	spinFor := blockSpin
	if how == recvIntr && !deadline.IsZero() {
		spinFor = waitSpin
	}
	for {
		// A poll first: the completion channel costs an interrupt and a
		// wake-up, worth it only when nothing comes soon.
		for spin := time.Now(); ; {
			if n := p.deliver(msgs); n > 0 {
				return n, nil
			}
			if how == recvIntr && p.interrupted.Swap(false) {
				return 0, nil
			}
			el := time.Since(spin)
			if el > spinFor {
				break
			}
			if el > blockSpin {
				// The datagram comes from rxe's kernel work, which needs
				// this CPU as much as the peer's threads do.
				unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
		if err := p.recvCQ.Arm(); err != nil {
			if p.closed.Load() {
				return 0, fabric.ErrClosed
			}
			return 0, err
		}
		if n := p.deliver(msgs); n > 0 {
			return n, nil
		}
		wake := deadline
		if p.holding.Load() > 0 {
			// Resume raises no event.
			if w := time.Now().Add(holdWake); wake.IsZero() || w.Before(wake) {
				wake = w
			}
		}
		var err error
		if how == recvIntr {
			err = p.recvCQ.WaitUnless(wake, &p.interrupted)
		} else {
			err = p.recvCQ.Wait(wake)
		}
		switch {
		case p.closed.Load() || errors.Is(err, os.ErrClosed):
			return 0, fabric.ErrClosed
		case errors.Is(err, verbs.ErrWoken):
			p.interrupted.Store(false)
			if n := p.deliver(msgs); n > 0 {
				return n, nil
			}
			return 0, nil
		case errors.Is(err, verbs.ErrTimeout):
			if !deadline.IsZero() && !time.Now().Before(deadline) {
				if n := p.deliver(msgs); n > 0 {
					return n, nil
				}
				return 0, os.ErrDeadlineExceeded
			}
		case err != nil:
			return 0, err
		}
	}
}

// Polling. The completions a poller waits for are made by the kernel's
// soft-RoCE work (softirq, kernel threads) on the same few CPUs: a poller
// that only ever yields to other goroutines starves it, and its own
// latency grows to the scheduler's tick. After pollSpin without a
// datagram, every empty Poll gives the CPU up (sched_yield), so that
// runnable kernel work goes first; blocking Receive polls for blockSpin
// before it arms the completion channel.
// A Wait (a thread driving the port for its own message, which has
// already polled a while) polls for waitSpin, yielding the CPU after
// blockSpin: a completion channel's event and the wake-up of the sleeping
// thread cost more than that where the CPUs are emulated or halt when
// idle, and the answer to a message often comes within it.
const (
	pollSpin  = 50 * time.Microsecond
	blockSpin = 10 * time.Microsecond
	waitSpin  = 250 * time.Microsecond
)

// pollIdle notes a Poll that found nothing (or something). Runs under
// recvMu.
func (p *Port) pollIdle(empty bool) {
	if !empty {
		p.idleSince = time.Time{}
		return
	}
	now := time.Now()
	if p.idleSince.IsZero() {
		p.idleSince = now
		return
	}
	if now.Sub(p.idleSince) > pollSpin {
		p.stats.yields.Add(1)
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}

// deliver reaps completions and hands out ready datagrams.
func (p *Port) deliver(msgs [][]byte) int {
	p.rxMu.Lock()
	failed := p.pumpRecvLocked()
	n := min(len(msgs), len(p.ready))
	p.lent = append(p.lent, p.ready[:n]...)
	p.ready = p.ready[n:]
	p.groupLocked(p.lent)
	for i, r := range p.lent {
		msgs[i] = p.bytesOf(r)
	}
	if len(p.ready) == 0 {
		p.ready = p.readyBuf[:0]
	}
	p.rxMu.Unlock()
	p.failAll(failed)
	p.stats.received.Add(uint64(n))
	p.flushCredits()
	return n
}

// releaseLentLocked returns the buffers handed out by the previous call to
// the SRQ. Runs under rxMu.
func (p *Port) releaseLentLocked() {
	for _, r := range p.lent {
		if r.idx >= 0 {
			p.repostLocked(r.idx)
		}
	}
	clear(p.lent)
	p.lent = p.lent[:0]
}

// repostLocked posts pool buffer idx on the SRQ (whose ring holds the
// whole pool, so it has room). Runs under rxMu.
func (p *Port) repostLocked(idx int) {
	if p.inSRQ[idx] || p.closed.Load() {
		return
	}
	if err := p.srq.PostRecv(uint64(idx), p.recv.sge(idx, BufSize)); err != nil {
		p.recv.put(idx) // not expected: kept for a later repost
		return
	}
	p.inSRQ[idx] = true
}

// refillLocked posts the pool's free buffers (those a failed post left
// there). Runs under rxMu.
func (p *Port) refillLocked() {
	for len(p.recv.free) > 0 {
		idx, _ := p.recv.get()
		if err := p.srq.PostRecv(uint64(idx), p.recv.sge(idx, BufSize)); err != nil {
			p.recv.put(idx)
			return
		}
		p.inSRQ[idx] = true
	}
}

// creditOnly marks the immediate data of a SEND that carries credits and
// no datagram; the low bits of every SEND's immediate data are credits.
const (
	creditOnly = 1 << 31
	creditMask = creditOnly - 1
)

// pumpRecvLocked moves receive completions to the ready queue and returns
// the conns whose receives failed (to be failed once rxMu is released).
// Runs under rxMu.
func (p *Port) pumpRecvLocked() (failed []*conn) {
	if p.closed.Load() {
		return nil
	}
	granted := false
	for {
		n := p.recvCQ.Poll(p.recvWC)
		for _, wc := range p.recvWC[:n] {
			idx := int(wc.WrID)
			if idx < 0 || idx >= len(p.inSRQ) || !p.inSRQ[idx] {
				continue
			}
			p.inSRQ[idx] = false
			c := p.rxByQPN[wc.QPNum]
			if wc.Status != verbs.WCSuccess {
				p.repostLocked(idx)
				if c != nil && wc.Status != verbs.WCFlushErr {
					failed = append(failed, c)
					p.rxErr = &verbs.WCError{Status: wc.Status, QPNum: wc.QPNum}
				}
				continue
			}
			if c == nil {
				p.repostLocked(idx) // from a queue pair retired meanwhile
				continue
			}
			c.active.Add(1)
			c.confirmed.Store(true)
			if wc.Imm {
				if k := wc.ImmData & creditMask; k > 0 {
					c.credits.Add(int64(k))
					granted = true
				}
				if wc.ImmData&creditOnly != 0 {
					p.repostLocked(idx)
					continue
				}
			}
			r := readyDg{c: c, idx: idx, n: int(wc.ByteLen)}
			if c.holding {
				// Held back: kept in order (a copy: the buffer serves
				// the other peers meanwhile), and not credited.
				c.held = append(c.held, p.copyOutLocked(r, false))
				c.unpaid++
				continue
			}
			p.ready = append(p.ready, r)
			p.oweLocked(c, 1)
		}
		if n < len(p.recvWC) {
			break
		}
	}
	if granted && p.creditWaiters.Load() > 0 {
		p.creditMu.Lock()
		close(p.creditCh)
		p.creditCh = make(chan struct{})
		p.creditMu.Unlock()
	}
	return failed
}

// oweLocked notes n datagrams from c to credit back. Runs under rxMu.
func (p *Port) oweLocked(c *conn, n int) {
	if c.owed.Add(int64(n)) >= int64(p.creditBatch()) {
		p.creditDue.Store(true)
	}
}

func (p *Port) failAll(cs []*conn) {
	for _, c := range cs {
		c.fail(errors.Join(ErrPeerLost, p.rxErrSnapshot()))
	}
}

func (p *Port) rxErrSnapshot() error {
	p.rxMu.Lock()
	defer p.rxMu.Unlock()
	return p.rxErr
}

// pumpRecv is pumpRecvLocked for callers outside the receive path (a Send
// waiting for credit).
func (p *Port) pumpRecv() {
	p.rxMu.Lock()
	failed := p.pumpRecvLocked()
	p.rxMu.Unlock()
	p.failAll(failed)
}

// creditBatch is how many datagrams are credited back at least at once
// when no datagram goes to the peer to carry the credits.
func (p *Port) creditBatch() int { return max(1, p.cfg.RecvPerPeer/2) }
