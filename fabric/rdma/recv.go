package rdma

import (
	"errors"
	"os"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/osyield"
	"github.com/pcor-go/pcor/internal/verbs"
)

// The receive side keeps every QP's receive ring topped up independently
// of the consumer: whoever reaps a receive completion (Receive, Poll, or a
// Send waiting for credit) moves the datagram to the ready queue and posts
// a fresh buffer from the pool in its place. A consumer that is itself
// blocked sending therefore never starves its peers of receive buffers
// (two dispatchers each waiting in Send for the other would otherwise
// deadlock). Buffers return to the pool when the consumer is done with
// them; only when the whole pool is held by unconsumed datagrams does a
// peer see receiver-not-ready, which is back-pressure, not loss.

type readyDg struct {
	idx, n int
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
		// Unless the Wait before lasted longer (see waitSpin).
		if !p.waitSlept.Load() {
			spinFor = waitSpin
		}
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
				p.stats.yields.Add(1)
				osyield.Yield()
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
// datagram, every pollYieldEvery-th empty Poll gives the CPU up
// (sched_yield), so that runnable kernel work goes first; blocking Receive
// polls for blockSpin before it arms the completion channel.
// A yield at every empty Poll made the system calls of a polling pcor in
// the guest 4-6 times as many at host load 4-10 (a 2 B round trip
// 981-1,454 against 177-252, a 64 KiB message 444-622 against 129-131,
// both processes),
// with round trips and throughput the same within the noise of the
// emulated guest: a poll of the ring costs a few loads, a yield a system
// call of the emulated CPU, and the raw verbs ends of the benchmarks
// yield every 256 empty polls. The fewer yields come with more context
// switches (16-17 against 26 per round trip): the kernel's work then
// preempts the poller rather than being yielded to.
// A Wait (a thread driving the port for its own message, which has
// already polled a while) polls for waitSpin, yielding the CPU after
// blockSpin: a completion channel's event and the wake-up of the sleeping
// thread cost more than that where the CPUs are emulated or halt when
// idle, and the answer to a message often comes within it. When it did
// not, the last time (that Wait lasted longer than waitSpin: it slept, or
// was interrupted, or its deadline came), the next Wait polls only
// blockSpin: in a stream, where each message is waited for milliseconds
// (the end of a rendezvous read, the done message of one), or in each
// slice of a long wait, the spin only took the CPU from the kernel's
// soft-RoCE work that the stream waits for, in system calls (yields)
// of the emulated CPU.
const (
	pollSpin  = 50 * time.Microsecond
	blockSpin = 10 * time.Microsecond
	waitSpin  = 250 * time.Microsecond

	pollYieldEvery = 16
)

// pollIdle notes a Poll that found nothing (or something). Runs under
// recvMu.
func (p *Port) pollIdle(empty bool) {
	if !empty {
		p.idleSince = time.Time{}
		p.idlePolls = 0
		return
	}
	now := time.Now()
	if p.idleSince.IsZero() {
		p.idleSince = now
		return
	}
	p.idlePolls++
	if now.Sub(p.idleSince) > pollSpin && p.idlePolls%pollYieldEvery == 0 {
		p.stats.yields.Add(1)
		osyield.Yield()
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
		msgs[i] = p.recv.buf(r.idx)[:r.n]
	}
	if len(p.ready) == 0 {
		p.ready = p.readyBuf[:0]
	}
	p.rxMu.Unlock()
	p.failAll(failed)
	p.stats.received.Add(uint64(n))
	return n
}

// releaseLentLocked returns the buffers handed out by the previous call to
// the pool and tops up receive rings that ran short. Runs under rxMu.
func (p *Port) releaseLentLocked() {
	for _, r := range p.lent {
		if r.idx >= 0 {
			p.recvOwner[r.idx] = nil
			p.recv.put(r.idx)
		}
	}
	p.lent = p.lent[:0]
	if p.starved == 0 {
		return
	}
	p.starved = 0
	for _, c := range p.rxConns {
		for !c.dead.Load() && !c.holding && c.recvPosted < p.cfg.RecvPerPeer {
			if !p.postRecvLocked(c) {
				p.starved++
				break
			}
		}
	}
}

// postRecvLocked posts one pool buffer on c; false when the pool is empty
// or the ring refuses it. Runs under rxMu.
func (p *Port) postRecvLocked(c *conn) bool {
	idx, ok := p.recv.get()
	if !ok {
		return false
	}
	if err := c.qp.PostRecv(uint64(idx), p.recv.sge(idx, BufSize)); err != nil {
		p.recv.put(idx)
		return false
	}
	p.recvOwner[idx] = c
	c.recvPosted++
	return true
}

// pumpRecvLocked moves receive completions to the ready queue, replacing
// each consumed buffer on its QP, and returns the conns whose receives
// failed (to be failed once rxMu is released). Runs under rxMu.
func (p *Port) pumpRecvLocked() (failed []*conn) {
	if p.closed.Load() {
		return nil
	}
	for {
		n := p.recvCQ.Poll(p.recvWC)
		for _, wc := range p.recvWC[:n] {
			idx := int(wc.WrID)
			if idx < 0 || idx >= len(p.recvOwner) || p.recvOwner[idx] == nil {
				continue
			}
			c := p.recvOwner[idx]
			c.recvPosted--
			if wc.Status != verbs.WCSuccess {
				p.recvOwner[idx] = nil
				p.recv.put(idx)
				if wc.Status != verbs.WCFlushErr {
					failed = append(failed, c)
					p.rxErr = &verbs.WCError{Status: wc.Status, QPNum: wc.QPNum}
				}
				continue
			}
			c.active.Add(1)
			c.confirmed.Store(true)
			if c.holding {
				// Held back: kept in order, and no receive reposted.
				c.held = append(c.held, readyDg{idx: idx, n: int(wc.ByteLen)})
				continue
			}
			p.ready = append(p.ready, readyDg{idx: idx, n: int(wc.ByteLen)})
			if !c.dead.Load() && !p.postRecvLocked(c) {
				p.starved++
			}
		}
		if n < len(p.recvWC) {
			return failed
		}
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
