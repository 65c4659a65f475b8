package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/faulty"
	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/internal/wire"
)

// protectedPort is a mem port that says it protects datagram bytes, as
// UDP does; it records the flags of the data datagrams it sends, and
// which of them went unsealed (a zero checksum) by the size of their
// message.
type protectedPort struct {
	fabric.Port
	mu       sync.Mutex
	flags    []uint8
	unsealed map[uint64]int // message size: data datagrams with a zero checksum
	sealed   map[uint64]int // and with one
}

func (p *protectedPort) Caps() fabric.Caps { return fabric.Protected }

func (p *protectedPort) Send(dgs []fabric.Datagram) (int, error) {
	p.mu.Lock()
	for _, d := range dgs {
		if len(d.Head) >= wire.HeaderSize && wire.Kind(d.Head[3]) == wire.Data {
			p.flags = append(p.flags, d.Head[4])
			if p.sealed == nil {
				p.sealed, p.unsealed = map[uint64]int{}, map[uint64]int{}
			}
			total := binary.LittleEndian.Uint64(d.Head[56:])
			if binary.LittleEndian.Uint64(d.Head[72:]) == 0 {
				p.unsealed[total]++
			} else {
				p.sealed[total]++
			}
		}
	}
	p.mu.Unlock()
	return p.Port.Send(dgs)
}

// unsummed counts the data datagrams sent without a body checksum, of all.
func (p *protectedPort) unsummed() (n, of int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.flags {
		if f&wire.FlagBodyUnsummed != 0 {
			n++
		}
	}
	return n, len(p.flags)
}

// Over a fabric that protects datagram bytes only headers are summed,
// unless Config.SumBodies asks for bodies too; over any other fabric
// bodies are summed. A small whole message whose body is not summed goes
// with no checksum at all (wire.EncodeUnsealed): nothing would verify it.
func TestBodyUnsummedOnProtected(t *testing.T) {
	for _, c := range []struct {
		name      string
		protected bool
		sumBodies bool
		want      bool // data datagrams go unsummed
	}{
		{"protected", true, false, true},
		{"protected, SumBodies", true, true, false},
		{"unprotected", false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := mem.NewNetwork()
			a, _ := n.Listen("a")
			b, _ := n.Listen("b")
			pa := &protectedPort{Port: a}
			var fa, fb fabric.Port = pa, b
			if c.protected {
				fb = &protectedPort{Port: b}
			} else {
				fa = &recordOnly{pa}
			}
			e0, e1 := pair(t, fa, fb, Config{SumBodies: c.sumBodies})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for i, size := range []int{1, 5000, 200 << 10} {
				data := pattern(size, uint64(i))
				s := e0.newSend(0, 1, 0, 1, data)
				e0.post(s)
				r := e1.newRecv(0, 0, 0, 1, nil)
				e1.post(r)
				if err := r.Wait(ctx); err != nil || !bytes.Equal(r.Data(), data) {
					t.Fatalf("%d bytes: %v", size, err)
				}
				if err := s.Wait(ctx); err != nil {
					t.Fatal(err)
				}
			}
			k, of := pa.unsummed()
			if of == 0 || (k == of) != c.want || (k == 0) == c.want {
				t.Errorf("%d of %d data datagrams unsummed, want all %v", k, of, c.want)
			}
			pa.mu.Lock()
			defer pa.mu.Unlock()
			for _, size := range []uint64{1, 5000, 200 << 10} {
				// Only the 1 B message is small and whole; only with its
				// body unsummed may it go unsealed.
				wantUnsealed := c.want && size == 1
				if u, s := pa.unsealed[size], pa.sealed[size]; wantUnsealed && (u == 0 || s != 0) || !wantUnsealed && (u != 0 || s == 0) {
					t.Errorf("%d B: %d data datagrams without a checksum, %d with, want unsealed %v", size, u, s, wantUnsealed)
				}
			}
		})
	}
}

// recordOnly hides the Caps of a protectedPort: a plain port that still
// records flags.
type recordOnly struct{ p *protectedPort }

func (r *recordOnly) Send(dgs []fabric.Datagram) (int, error)         { return r.p.Send(dgs) }
func (r *recordOnly) Receive(msgs [][]byte) (int, error)              { return r.p.Receive(msgs) }
func (r *recordOnly) Poll(msgs [][]byte) (int, error)                 { return r.p.Poll(msgs) }
func (r *recordOnly) BatchSize() int                                  { return r.p.BatchSize() }
func (r *recordOnly) MaxDatagram(ep fabric.Endpoint) int              { return r.p.MaxDatagram(ep) }
func (r *recordOnly) LocalEndpoint() fabric.Endpoint                  { return r.p.LocalEndpoint() }
func (r *recordOnly) ParseEndpoint(s string) (fabric.Endpoint, error) { return r.p.ParseEndpoint(s) }
func (r *recordOnly) Kind() string                                    { return r.p.Kind() }
func (r *recordOnly) Alloc(n int) []byte                              { return r.p.Alloc(n) }
func (r *recordOnly) Close() error                                    { return r.p.Close() }

// A datagram whose body was not summed is dropped when it arrives on a
// port whose fabric does not protect bodies.
func TestUnsummedRefusedUnprotected(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	e, err := New(Config{Proc: 0, JobKey: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.AddPort(a, Blocking)
	if err := e.SetPeer(1, 0, "b"); err != nil {
		t.Fatal(err)
	}
	body := []byte("body")
	h := wire.Header{Kind: wire.Data, Flags: wire.FlagBodyUnsummed, JobKey: 7, SrcProc: 1, DstProc: 0,
		FragSize: 4, Total: 4, Hops: wire.DefaultHops}
	head := make([]byte, wire.HeaderSize)
	h.Encode(head, body)
	if _, err := b.Send([]fabric.Datagram{{Head: head, Body: body, To: mem.Endpoint("a")}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The datagram is counted received before it is handled: wait
		// for the outcome, a drop or a message.
		s := e.Stats()[0]
		if s.Drops["checksum"] > 0 || s.MessagesRecv > 0 {
			if s.Drops["checksum"] != 1 || s.MessagesRecv != 0 {
				t.Fatalf("drops %v, messages %d", s.Drops, s.MessagesRecv)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the datagram was neither dropped nor delivered: %d received, drops %v", s.FragsRecv, s.Drops)
		}
		time.Sleep(time.Millisecond)
	}
}

// A gateway passing datagrams from a fabric that protects bodies to one
// that does not (and corrupts some) sums their bodies again: every message
// arrives, whole.
func TestForwardReseals(t *testing.T) {
	ab, bc := mem.NewNetwork(), mem.NewNetwork()
	ma, _ := ab.Listen("a")
	mb1, _ := ab.Listen("b1")
	mb2, _ := bc.Listen("b2")
	pc, _ := bc.Listen("c")
	pa, pb1 := &protectedPort{Port: ma}, &protectedPort{Port: mb1}
	bad := faulty.Wrap(mb2, faulty.Faults{Seed: 5, Corrupt: 0.1})
	mk := func(proc ProcID) *Engine {
		e, err := New(Config{Proc: proc, JobKey: 9})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	a, b, c := mk(0), mk(1), mk(2)
	a.AddPort(pa, Blocking)
	b.AddPort(pb1, Blocking)
	b.AddPort(bad, Blocking)
	c.AddPort(pc, Blocking)
	for _, err := range []error{a.SetPeer(1, 0, "b1"), a.SetPeer(2, 0, "b1"), b.SetPeer(0, 0, "a"), b.SetPeer(2, 1, "c"),
		c.SetPeer(1, 0, "b2"), c.SetPeer(0, 0, "b2")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sizes := []int{1, 3000, 300 << 10}
	for i := 0; i < 40; i++ {
		sizes = append(sizes, 64<<10)
	}
	for i, size := range sizes {
		data := pattern(size, uint64(i))
		s := a.newSend(0, 2, 0, 1, data)
		a.post(s)
		r := c.newRecv(0, 0, 0, 1, nil)
		c.post(r)
		if err := r.Wait(ctx); err != nil || !bytes.Equal(r.Data(), data) {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if k, _ := pa.unsummed(); k == 0 {
		t.Error("the sender summed every body over the protected fabric")
	}
	if st := c.Stats()[0]; st.Drops["checksum"] == 0 {
		t.Errorf("no corrupt datagram was caught on the unprotected fabric (drops %v)", st.Drops)
	}
}
