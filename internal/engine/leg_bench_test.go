package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
)

// legNet joins legPorts: in-process ports whose sends land in the
// destination's queue at once, so that one goroutine can play both sides
// of a ping-pong, each thread driving its own port (fabric.Waiter) and
// finding its message there at the first poll. With no other goroutine on
// the path and no spinning, the instructions a round trip takes are the
// engine's own, and repeatable (callgrind), which timing on a loaded
// machine is not.
type legNet struct {
	mu    sync.Mutex
	ports map[string]*legPort
}

type legPort struct {
	net  *legNet
	name mem.Endpoint
	caps fabric.Caps

	mu    sync.Mutex
	q     [][]byte // datagrams waiting
	given [][]byte // returned by the last poll, reused at the next
	free  [][]byte
	gated bool // polls find nothing (tests)
	wake  chan struct{}
	intr  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// legPorts makes two ports, "a" and "b", offering caps; with fabric.Reliable
// they hold datagrams back as a reliable fabric does (fabric.Holder).
func legPorts(caps fabric.Caps) (fabric.Port, fabric.Port) {
	n := &legNet{ports: map[string]*legPort{}}
	mk := func(name string) *legPort {
		p := &legPort{net: n, name: mem.Endpoint(name), caps: caps, wake: make(chan struct{}, 1),
			intr: make(chan struct{}, 1), done: make(chan struct{})}
		n.ports[name] = p
		return p
	}
	a, b := mk("a"), mk("b")
	if caps.Has(fabric.Reliable) {
		return &legHolder{a}, &legHolder{b}
	}
	return a, b
}

func (p *legPort) Send(dgs []fabric.Datagram) (int, error) {
	select {
	case <-p.done:
		return 0, fabric.ErrClosed
	default:
	}
	for i := range dgs {
		d := &dgs[i]
		p.net.mu.Lock()
		dst := p.net.ports[d.To.String()]
		p.net.mu.Unlock()
		if dst == nil {
			continue
		}
		dst.mu.Lock()
		var b []byte
		if n := len(dst.free); n > 0 {
			b = dst.free[n-1][:0]
			dst.free = dst.free[:n-1]
		}
		b = append(append(b, d.Head...), d.Body...)
		dst.q = append(dst.q, b)
		dst.mu.Unlock()
		select {
		case dst.wake <- struct{}{}:
		default:
		}
	}
	return len(dgs), nil
}

func (p *legPort) Poll(msgs [][]byte) (int, error) {
	select {
	case <-p.done:
		return 0, fabric.ErrClosed
	default:
	}
	p.mu.Lock()
	if p.gated {
		p.mu.Unlock()
		return 0, nil
	}
	p.free = append(p.free, p.given...)
	clear(p.given)
	p.given = p.given[:0]
	n := copy(msgs, p.q)
	p.given = append(p.given, p.q[:n]...)
	k := copy(p.q, p.q[n:])
	clear(p.q[k:])
	p.q = p.q[:k]
	p.mu.Unlock()
	return n, nil
}

func (p *legPort) Receive(msgs [][]byte) (int, error) {
	for {
		if n, err := p.Poll(msgs); n > 0 || err != nil {
			return n, err
		}
		select {
		case <-p.wake:
		case <-p.done:
			return 0, fabric.ErrClosed
		}
	}
}

func (p *legPort) Wait(msgs [][]byte, deadline time.Time) (int, error) {
	if n, err := p.Poll(msgs); n > 0 || err != nil {
		return n, err
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-p.wake:
	case <-p.intr:
	case <-t.C:
	case <-p.done:
		return 0, fabric.ErrClosed
	}
	return p.Poll(msgs)
}

func (p *legPort) Park(msgs [][]byte) (int, error) {
	for {
		if n, err := p.Poll(msgs); n > 0 || err != nil {
			return n, err
		}
		select {
		case <-p.wake:
		case <-p.intr:
			return 0, nil
		case <-p.done:
			return 0, fabric.ErrClosed
		}
	}
}

func (p *legPort) Interrupt() error {
	select {
	case p.intr <- struct{}{}:
	default:
	}
	return nil
}

func (p *legPort) Caps() fabric.Caps                               { return p.caps }
func (p *legPort) BatchSize() int                                  { return 64 }
func (p *legPort) MaxDatagram(fabric.Endpoint) int                 { return 65000 }
func (p *legPort) LocalEndpoint() fabric.Endpoint                  { return p.name }
func (p *legPort) ParseEndpoint(s string) (fabric.Endpoint, error) { return mem.Endpoint(s), nil }
func (p *legPort) Kind() string                                    { return "leg" }
func (p *legPort) Alloc(n int) []byte                              { return make([]byte, n) }
func (p *legPort) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

// legOf returns the legPort of a port legPorts made.
func legOf(p fabric.Port) *legPort {
	if h, ok := p.(*legHolder); ok {
		return h.legPort
	}
	return p.(*legPort)
}

// gate stops (or lets again) polls from finding the datagrams waiting.
func (p *legPort) gate(on bool) {
	p.mu.Lock()
	p.gated = on
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// permute reorders the datagrams waiting: the i-th goes to place order[i]
// (those beyond order keep their place). It reports how many wait.
func (p *legPort) permute(order []int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(order) <= len(p.q) {
		q := append([][]byte(nil), p.q...)
		for i, j := range order {
			p.q[j] = q[i]
		}
	}
	return len(p.q)
}

// legHolder is a legPort that holds datagrams back (fabric.Holder).
type legHolder struct{ *legPort }

// Hold puts msgs[i] of the last poll back at the head of the queue (the
// benchmarks never run out of room: only for completeness).
func (p *legHolder) Hold(i int) int {
	p.mu.Lock()
	if i < len(p.given) {
		p.q = append(append([][]byte{}, p.given[i:]...), p.q...)
		n := len(p.given) - i - 1
		p.given = p.given[:i]
		p.mu.Unlock()
		return n
	}
	p.mu.Unlock()
	return 0
}
func (p *legHolder) Handled() {}
func (p *legHolder) Resume()  {}

// legPair builds two engines (procs 0 and 1) over legPorts.
func legPair(b testing.TB, caps fabric.Caps, mode Mode, cfg Config) (*Engine, *Engine, fabric.Port, fabric.Port) {
	pa, pb := legPorts(caps)
	cfg.JobKey = 0xfeed
	c0, c1 := cfg, cfg
	c0.Proc, c1.Proc = 0, 1
	e0, err := New(c0)
	if err != nil {
		b.Fatal(err)
	}
	e1, err := New(c1)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e0.AddPort(pa, mode); err != nil {
		b.Fatal(err)
	}
	if _, err := e1.AddPort(pb, mode); err != nil {
		b.Fatal(err)
	}
	if err := e0.SetPeer(1, 0, "b"); err != nil {
		b.Fatal(err)
	}
	if err := e1.SetPeer(0, 0, "a"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e0.Close(); e1.Close() })
	return e0, e1, pa, pb
}

// legPingPong is the state of BenchmarkPingPong1: two threads, one on each
// engine, and the requests and buffers they reuse.
type legPingPong struct {
	b        *testing.B
	ctx      context.Context
	e0, e1   *Engine
	a, z     *Endpoint
	msg      []byte
	bufA     []byte
	bufZ     []byte
	reqs     [2]*Request // datagram: the send requests of e0 and e1
	lastSend *Request    // datagram: e1's last send, acknowledged by the next ping
}

func newLegPingPong(b *testing.B, caps fabric.Caps) *legPingPong {
	// No dispatcher takes a port back between two legs (a leg under
	// valgrind can last longer than the grace): the counts are the path's.
	// Nor does an acknowledgement leave on its own for want of a reply in
	// time, nor a fragment go again.
	grace, deferral := progressGrace, ackDefer
	progressGrace, ackDefer = time.Hour, time.Hour
	b.Cleanup(func() { progressGrace, ackDefer = grace, deferral })
	e0, e1, _, _ := legPair(b, caps, Polling, Config{MinRTO: time.Hour, MaxRTO: 2 * time.Hour, AckDelay: time.Hour})
	return &legPingPong{b: b, ctx: context.Background(), e0: e0, e1: e1, a: e0.Endpoint(1), z: e1.Endpoint(2),
		msg: []byte{7}, bufA: make([]byte, 64), bufZ: make([]byte, 64),
		reqs: [2]*Request{ownRequest(e0, sendReq), ownRequest(e1, sendReq)}}
}

// reliable is a round trip on the reliable path: blocking Send, then Recv,
// each way. (Kept out of line: callgrind counts what it runs with
// --toggle-collect='*legPingPong).reliable'.)
//
//go:noinline
func (pp *legPingPong) reliable() {
	if err := pp.a.Send(pp.ctx, 1, 2, 5, pp.msg); err != nil {
		pp.b.Fatal(err)
	}
	if _, err := pp.z.Recv(pp.ctx, 0, 1, 5, pp.bufZ); err != nil {
		pp.b.Fatal(err)
	}
	if err := pp.z.Send(pp.ctx, 0, 1, 5, pp.msg); err != nil {
		pp.b.Fatal(err)
	}
	if _, err := pp.a.Recv(pp.ctx, 1, 2, 5, pp.bufA); err != nil {
		pp.b.Fatal(err)
	}
}

// send posts a send as Endpoint.Send does, its wait left to the caller
// (the other side must answer first).
func (pp *legPingPong) send(i int, e *Engine, src ThreadID, dst ProcID, dt ThreadID) *Request {
	r := pp.reqs[i]
	if r.state.Load() == stateDone {
		if !r.idle() {
			pp.b.Fatal("send request still referenced")
		}
		r.reset()
		r.kind = sendReq
	}
	r.setSend(src, dst, dt, 5, pp.msg)
	r.ackNow = true
	e.post(r)
	return r
}

// datagram is a round trip on the datagram path as two processes make it:
// the ping's sender waits for its acknowledgement, which the pong carries,
// then receives the pong, found waiting; the pong's sender found its
// receive posted, and its own send is acknowledged by the next ping.
//
//go:noinline
func (pp *legPingPong) datagram() {
	sa := pp.send(0, pp.e0, 1, 1, 2)
	if _, err := pp.z.Recv(pp.ctx, 0, 1, 5, pp.bufZ); err != nil {
		pp.b.Fatal(err)
	}
	if pp.lastSend != nil {
		if err := pp.lastSend.Wait(pp.ctx); err != nil {
			pp.b.Fatal(err)
		}
	}
	pp.lastSend = pp.send(1, pp.e1, 2, 0, 1)
	if err := sa.Wait(pp.ctx); err != nil {
		pp.b.Fatal(err)
	}
	if _, err := pp.a.Recv(pp.ctx, 1, 2, 5, pp.bufA); err != nil {
		pp.b.Fatal(err)
	}
}

// BenchmarkPingPong1: a 1 B ping-pong between two engines, one goroutine
// playing both threads; an op is a round trip (two sends, two receives,
// each receive driving its port). "reliable": over a reliable fabric (the
// shared-memory path). "datagram": over a fabric that protects bytes but
// may lose them (UDP's path).
func BenchmarkPingPong1(b *testing.B) {
	for _, c := range []struct {
		name string
		caps fabric.Caps
	}{{"reliable", fabric.Reliable | fabric.Protected}, {"datagram", fabric.Protected}} {
		b.Run(c.name, func(b *testing.B) {
			pp := newLegPingPong(b, c.caps)
			leg := pp.reliable
			if !c.caps.Has(fabric.Reliable) {
				leg = pp.datagram
			}
			for range 100 {
				leg()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				leg()
			}
			b.StopTimer()
			s0, s1 := pp.e0.Stats()[0], pp.e1.Stats()[0]
			b.ReportMetric(float64(s0.AcksSent+s1.AcksSent)/float64(b.N+100), "acks/op")
		})
	}
}
