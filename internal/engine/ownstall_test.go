package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/shm"
	"github.com/pcor-go/pcor/internal/wire"
)

// A peer's silence that is this process's own (peer.onWatch, ownStall):
// the port is not read while the timer judging the peer runs on time.

// stallFabrics are the fabrics whose ports tell of datagrams waiting
// (fabric.Pender): ports opens a raw port, a, for a forged process 0, and
// b, for the engine under test; reliable says whether b takes the reliable
// path.
var stallFabrics = []struct {
	name     string
	ports    func(t *testing.T) (fabric.Port, fabric.Port)
	reliable bool
}{
	{"shm", func(t *testing.T) (fabric.Port, fabric.Port) { a, b := shmPorts(t); return a, b }, true},
	{"udp", func(t *testing.T) (fabric.Port, fabric.Port) { return udpPort(t), udpPort(t) }, false},
}

// halfSender is process 0, forged through a raw port: it sends the
// fragments of one message to process 1 when told to, or never.
type halfSender struct {
	t        *testing.T
	a        fabric.Port
	to       fabric.Endpoint
	data     []byte
	fragSize uint32
	reliable bool
}

// stallMsg is the forged message's size and fragment size.
const stallMsg, stallFrag = 4 << 10, 1 << 10

// newStalled makes the engine under test, process 1 on port b, with
// process 0 a halfSender on port a.
func newStalled(t *testing.T, a, b fabric.Port, reliable bool, silence time.Duration) (*Engine, *halfSender) {
	t.Helper()
	t.Cleanup(func() { a.Close() })
	e, err := New(Config{Proc: 1, JobKey: 0xfeed, UnreachableTimeout: silence, Rendezvous: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.AddPort(b, Blocking); err != nil {
		t.Fatal(err)
	}
	if err := e.SetPeer(0, 0, a.LocalEndpoint().String()); err != nil {
		t.Fatal(err)
	}
	return e, &halfSender{t: t, a: a, to: b.LocalEndpoint(), data: pattern(stallMsg, 7), fragSize: stallFrag, reliable: reliable}
}

// send sends fragment i of the message.
func (s *halfSender) send(i uint32) {
	s.t.Helper()
	body := s.data[i*s.fragSize : (i+1)*s.fragSize]
	h := wire.Header{Kind: wire.Data, JobKey: 0xfeed, Hops: wire.DefaultHops, SrcInc: 1, SrcProc: 0, DstProc: 1,
		FragSize: s.fragSize, Total: uint64(len(s.data)), FragIndex: i, Seq: uint64(i), BodyLen: uint32(len(body))}
	head := make([]byte, wire.HeaderSize)
	if s.reliable {
		h.Flags = wire.FlagReliable
		h.Put(head)
	} else {
		h.Encode(head, body)
	}
	if _, err := s.a.Send([]fabric.Datagram{{Head: head, Body: body, To: s.to}}); err != nil {
		s.t.Fatal(err)
	}
}

// awaitPartial waits until the engine holds the message from process 0
// half received, and returns when the watch judging process 0 is due.
func awaitPartial(t *testing.T, e *Engine) int64 {
	t.Helper()
	p := e.peer(0)
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		p.rxmu.Lock()
		partial, due := p.rx.partial(), p.watchAt
		p.rxmu.Unlock()
		if partial {
			return due
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the first fragment was never handled")
		}
	}
}

// stallPort stops the reading of port d, as a thread that holds its
// progress token and its drive lock but gets no CPU does: it takes both
// from the dispatcher (which leaves the fabric). Nothing reads the port
// until the function returned is called.
func stallPort(t *testing.T, d *dispatcher) (resume func()) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !d.tryLead() {
		if time.Now().After(deadline) {
			t.Fatal("the port's token was never taken")
		}
		time.Sleep(time.Millisecond)
	}
	for !d.prog.drive.TryLock() {
		if time.Now().After(deadline) {
			d.letGo()
			t.Fatal("the dispatcher never left the fabric")
		}
		time.Sleep(time.Millisecond)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			d.prog.drive.Unlock()
			d.letGo()
		})
	}
	t.Cleanup(resume)
	return resume
}

// TestUnreadPortBlamesNoPeer: a receiver whose port goes unread for longer
// than the unreachable timeout, its timers running on time, in the middle
// of a message whose next fragment waits unread in the port, is silent
// itself: the peer must not be given up, and the message arrives whole
// once the port is read again. (Before the watch asked the port, it failed
// the peer with "silent for 301ms in the middle of a message".)
func TestUnreadPortBlamesNoPeer(t *testing.T) {
	for _, f := range stallFabrics {
		t.Run(f.name, func(t *testing.T) {
			const silence = 300 * time.Millisecond
			// The next fragment must be in the port before the watch is
			// due; a run whose test goroutine was held up longer than
			// that shows nothing and is made again.
			for attempt := 1; ; attempt++ {
				a, b := f.ports(t)
				e, s := newStalled(t, a, b, f.reliable, silence)
				s.send(0)
				due := awaitPartial(t, e)
				p := e.peer(0)
				resume := stallPort(t, p.ctrl().disp)
				s.send(1)
				if nanotime() > due-int64(silence/4) {
					if attempt == 5 {
						t.Fatal("the next fragment never came before the watch was due")
					}
					continue
				}
				time.Sleep(3 * silence)
				if err := p.silent.Load(); err != nil {
					t.Fatalf("the peer was given up for the receiver's own stall: %v", err)
				}
				s.send(2)
				s.send(3)
				resume()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				r := e.newRecv(0, 0, 0, 0, nil)
				e.post(r)
				if err := r.Wait(ctx); err != nil {
					t.Fatalf("receive after the receiver's own stall: %v", err)
				}
				if string(r.Data()) != string(s.data) {
					t.Fatal("the message differs")
				}
				return
			}
		})
	}
}

// TestUnreadAckBlamesNoPeer: a sender whose port goes unread for longer
// than the unreachable timeout, its timers running on time, while the
// acknowledgement of its message waits unread in the port, is silent
// itself: the send must not fail, and completes once the port is read
// again. (Before the send timer asked the port, it failed the peer with
// "no answer for 301ms".)
func TestUnreadAckBlamesNoPeer(t *testing.T) {
	const silence = 300 * time.Millisecond
	for attempt := 1; ; attempt++ {
		a, b := udpPort(t), udpPort(t)
		e, _ := newStalled(t, a, b, false, silence)
		r := send(t, e, 0, 0, 0, 1, []byte("hello"))
		// Process 0 reads the message.
		var h wire.Header
		msgs := make([][]byte, a.BatchSize())
		for deadline := time.Now().Add(10 * time.Second); h.Kind != wire.Data; {
			if time.Now().After(deadline) {
				t.Fatal("the message never came")
			}
			k, err := a.Poll(msgs)
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				time.Sleep(time.Millisecond)
			}
			for _, m := range msgs[:k] {
				// Its header is what counts (the body is summed as the
				// fabric carries it, which this test does not redo).
				if x, _, _ := wire.Decode(m, 0xfeed); x.Kind == wire.Data {
					h = x
				}
			}
		}
		p := e.peer(0)
		p.mu.Lock()
		due := p.tx.pendingSince + int64(silence)
		p.mu.Unlock()
		resume := stallPort(t, p.ctrl().disp)
		ack := wire.AckBody{Cum: h.Seq + 1, Window: 4096, Echo: noEcho}
		body := ack.Put(make([]byte, wire.AckBodyLen(0)))
		head := make([]byte, wire.HeaderSize)
		ah := wire.Header{Kind: wire.Ack, JobKey: 0xfeed, Hops: wire.DefaultHops, SrcInc: 1, SrcProc: 0, DstProc: 1}
		ah.Encode(head, body)
		if _, err := a.Send([]fabric.Datagram{{Head: head, Body: body, To: b.LocalEndpoint()}}); err != nil {
			t.Fatal(err)
		}
		if nanotime() > due-int64(silence/4) {
			// The acknowledgement came too late to show anything.
			if attempt == 5 {
				t.Fatal("the acknowledgement never came before the send was due to fail")
			}
			continue
		}
		time.Sleep(3 * silence)
		p.mu.Lock()
		err := p.tx.failed
		p.mu.Unlock()
		if err != nil {
			t.Fatalf("the peer was given up for the sender's own stall: %v", err)
		}
		resume()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("send after the sender's own stall: %v", err)
		}
		return
	}
}

// TestDeadPeerUnreadPortLost: a peer gone in the middle of a message is
// given up though this side does not read its port, when nothing waits in
// the port: the silence is the peer's.
func TestDeadPeerUnreadPortLost(t *testing.T) {
	for _, f := range stallFabrics {
		t.Run(f.name, func(t *testing.T) {
			const silence = 300 * time.Millisecond
			a, b := f.ports(t)
			e, s := newStalled(t, a, b, f.reliable, silence)
			s.send(0)
			awaitPartial(t, e)
			resume := stallPort(t, e.peer(0).ctrl().disp)
			defer resume()
			awaitLost(t, e, "port unread and empty")
		})
	}
}

// pendingPort is a shared-memory port that always says datagrams wait in
// it, as a port busy with other peers' datagrams may at every look.
type pendingPort struct{ *shm.Port }

func (pendingPort) Pending() bool { return true }

// TestDeadPeerBusyPortLost: a peer gone in the middle of a message is
// given up while this side's port, which it reads, always has datagrams
// waiting (of other processes; here datagrams of no job, dropped): the
// port handles batches, and nothing comes from the peer.
func TestDeadPeerBusyPortLost(t *testing.T) {
	const silence = 300 * time.Millisecond
	a, b := shmPorts(t)
	e, s := newStalled(t, a, pendingPort{b}, true, silence)
	s.send(0)
	awaitPartial(t, e)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		junk := make([]byte, wire.HeaderSize)
		h := wire.Header{Kind: wire.Hello, JobKey: 0xbad, Hops: wire.DefaultHops, SrcProc: 2, DstProc: 1}
		h.Encode(junk, nil)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := a.Send([]fabric.Datagram{{Head: junk, To: s.to}}); err != nil {
				return
			}
		}
	}()
	defer wg.Wait()
	defer close(stop)
	awaitLost(t, e, "port busy")
	if e.Stats()[0].Drops["jobkey"] == 0 {
		t.Fatal("the port handled none of the datagrams of no job")
	}
}

// awaitLost waits for a receive from process 0, gone in the middle of a
// message, to fail with an UnreachableError; how says this side's port.
func awaitLost(t *testing.T, e *Engine, how string) {
	t.Helper()
	r := e.newRecv(0, 0, 0, 0, nil)
	e.post(r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ue *UnreachableError
	if err := r.Wait(ctx); !errors.As(err, &ue) {
		t.Fatalf("receive from a peer gone mid-message, %s: %v, want an UnreachableError", how, err)
	}
}
