package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/faulty"
	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/internal/wire"
)

// soloPort records, for each first transmission of a data datagram, the
// size of its message and whether it went alone in its Send as one
// buffer, header and body together (the solo path, soloLocked).
type soloPort struct {
	fabric.Port
	mu   sync.Mutex
	solo map[uint64]int // message size: datagrams sent solo
	not  map[uint64]int // and otherwise
}

func (p *soloPort) Caps() fabric.Caps { return fabric.Protected }

func (p *soloPort) Send(dgs []fabric.Datagram) (int, error) {
	p.mu.Lock()
	for _, d := range dgs {
		if len(d.Head) < wire.HeaderSize || wire.Kind(d.Head[3]) != wire.Data || d.Head[4]&wire.FlagRetransmit != 0 {
			continue
		}
		total := binary.LittleEndian.Uint64(d.Head[56:])
		if len(dgs) == 1 && len(d.Body) == 0 && uint64(len(d.Head)) == wire.HeaderSize+total {
			p.solo[total]++
		} else {
			p.not[total]++
		}
	}
	p.mu.Unlock()
	return p.Port.Send(dgs)
}

func (p *soloPort) counts(size uint64) (solo, not int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.solo[size], p.not[size]
}

// soloPingPong runs rounds of a blocking ping-pong of each size between
// e0 and e1, checking every message.
func soloPingPong(t *testing.T, e0, e1 *Engine, sizes []int, rounds int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	near, far := e0.Endpoint(1), e1.Endpoint(2)
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 1024)
		for i := range rounds {
			for j, size := range sizes {
				r, err := far.Recv(ctx, 0, 1, 5, buf)
				if err != nil {
					errc <- err
					return
				}
				if want := pattern(size, uint64(i*len(sizes)+j)); !bytes.Equal(r.Data(), want) {
					errc <- fmt.Errorf("round %d: %d bytes: got %d bytes, not the message sent", i, size, len(r.Data()))
					return
				}
				if err := far.Send(ctx, 0, 1, 5, r.Data()); err != nil {
					errc <- err
					return
				}
			}
		}
		errc <- nil
	}()
	buf := make([]byte, 1024)
	for i := range rounds {
		for j, size := range sizes {
			data := pattern(size, uint64(i*len(sizes)+j))
			if err := near.Send(ctx, 1, 2, 5, data); err != nil {
				t.Fatalf("round %d: send of %d bytes: %v", i, size, err)
			}
			r, err := near.Recv(ctx, 1, 2, 5, buf)
			if err != nil {
				t.Fatalf("round %d: reply of %d bytes: %v", i, size, err)
			}
			if !bytes.Equal(r.Data(), data) {
				t.Fatalf("round %d: reply of %d bytes: got %d bytes, not the message sent", i, size, len(r.Data()))
			}
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// A lone small message on the datagram path goes to the fabric from the
// sending thread as one datagram in one buffer (soloLocked), carrying
// what the general path's would, and is retransmitted as any other when
// it is lost.
func TestSoloSend(t *testing.T) {
	sizes := []int{1, 100, soloMax, soloMax + 1, 1000}
	t.Run("clean", func(t *testing.T) {
		// No timer fires (no retransmission, no probe): every message
		// after a stream's first finds nothing queued or in flight.
		n := mem.NewNetwork()
		a, _ := n.Listen("a")
		b, _ := n.Listen("b")
		pa := &soloPort{Port: a, solo: map[uint64]int{}, not: map[uint64]int{}}
		e0, e1 := pair(t, pa, &soloPort{Port: b, solo: map[uint64]int{}, not: map[uint64]int{}},
			Config{MinRTO: time.Hour, MaxRTO: 2 * time.Hour, AckDelay: time.Hour})
		const rounds = 20
		soloPingPong(t, e0, e1, sizes, rounds)
		for i, size := range sizes {
			solo, not := pa.counts(uint64(size))
			wantSolo := rounds
			if i == 0 {
				wantSolo-- // the stream's first message bounds its slow start
			}
			if size > soloMax {
				wantSolo = 0
			}
			if solo != wantSolo || solo+not != rounds {
				t.Errorf("%d B: %d messages sent solo, %d not, want %d solo of %d", size, solo, not, wantSolo, rounds)
			}
		}
		if s := e0.Stats()[0]; s.Retransmits != 0 || s.MessagesSent != uint64(rounds*len(sizes)) {
			t.Errorf("%d retransmissions, %d messages sent, want 0 and %d", s.Retransmits, s.MessagesSent, rounds*len(sizes))
		}
	})
	t.Run("lossy", func(t *testing.T) {
		n := mem.NewNetwork()
		a, _ := n.Listen("a")
		b, _ := n.Listen("b")
		fa := faulty.Wrap(a, faulty.Faults{Seed: 3, Loss: 0.2, Duplicate: 0.1, Reorder: 0.1})
		fb := faulty.Wrap(b, faulty.Faults{Seed: 4, Loss: 0.2, Duplicate: 0.1, Reorder: 0.1})
		pa := &soloPort{Port: fa, solo: map[uint64]int{}, not: map[uint64]int{}}
		e0, e1 := pair(t, pa, &soloPort{Port: fb, solo: map[uint64]int{}, not: map[uint64]int{}}, Config{MinRTO: time.Millisecond})
		soloPingPong(t, e0, e1, sizes, 20)
		if solo, _ := pa.counts(1); solo == 0 {
			t.Error("no 1 B message went solo")
		}
		if s := e0.Stats()[0]; s.Retransmits == 0 {
			t.Error("nothing was retransmitted: the faults did not bite")
		}
	})
}

// A whole message alone in its batch has its acknowledgement decided as
// it is taken (deferLoneLocked), with the outcome flush gives the same
// message followed in its batch by a datagram that touches no peer: sent
// at once, deferred for data going back, or left to the ack delay, and
// counted alike.
func TestDeferLoneAck(t *testing.T) {
	// A deferred acknowledgement stays deferred while the test looks (no
	// deadline passes under load).
	deferral := ackDefer
	ackDefer = time.Hour
	defer func() { ackDefer = deferral }()
	// The test drives the port as a waiting thread does, holding its
	// token: its dispatcher neither handles datagrams nor sends the
	// acknowledgements deferred meanwhile.
	a, b := legPorts(fabric.Protected)
	defer b.Close()
	e, err := New(Config{Proc: 0, JobKey: 1, AckDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.AddPort(a, Blocking); err != nil {
		t.Fatal(err)
	}
	if err := e.SetPeer(1, 0, "b"); err != nil {
		t.Fatal(err)
	}
	d := e.ports[0]
	p := e.peer(1)
	for i := 0; !d.tryLead(); i++ {
		if i == 10000 {
			t.Fatal("the port's token was never free")
		}
		time.Sleep(100 * time.Microsecond)
	}
	d.prog.drive.Lock()
	defer d.letGo()
	defer d.prog.drive.Unlock()
	msgs := make([][]byte, 4)
	// acks drains what b received and counts the acknowledgements.
	acks := func() int {
		k := 0
		for {
			got, err := b.Poll(msgs)
			if err != nil {
				t.Fatal(err)
			}
			if got == 0 {
				return k
			}
			for _, m := range msgs[:got] {
				if len(m) > 3 && wire.Kind(m[3]) == wire.Ack {
					k++
				}
			}
		}
	}
	var seq uint64
	outcome := func(flags uint8, replies int, alone bool) (sent int, deferred uint64) {
		// Nothing owed before: the last message's acknowledgement taken
		// as carried by data.
		p.rxmu.Lock()
		p.sentDataLocked(p.rx.cum, nanotime())
		p.rx.replies = int8(replies)
		p.rxmu.Unlock()
		acks()
		before := e.Stats()[0].AcksDeferred
		h := wire.Header{Kind: wire.Data, Flags: flags, JobKey: 1, Hops: wire.DefaultHops, SrcProc: 1, DstProc: 0,
			Tag: 1, FragSize: 1000, Total: 1, MsgID: seq, Seq: seq}
		seq++
		pkt := make([]byte, wire.HeaderSize+1)
		h.Encode(pkt[:wire.HeaderSize], pkt[wire.HeaderSize:])
		batch := [][]byte{pkt}
		if !alone {
			batch = append(batch, []byte("not a datagram")) // dropped: touches no peer
		}
		d.keepsDue = true // as a driving thread, which keeps the deadlines
		d.handleBatch(batch)
		return acks(), e.Stats()[0].AcksDeferred - before
	}
	for _, c := range []struct {
		name    string
		flags   uint8
		replies int
	}{
		{"asked, replies likely", wire.FlagAckNow, replyLikely},
		{"asked, no replies", wire.FlagAckNow, 0},
		{"asked, retransmitted", wire.FlagAckNow | wire.FlagRetransmit, replyLikely},
		{"not asked", 0, replyLikely},
		{"retransmitted", wire.FlagRetransmit, replyLikely},
	} {
		s1, d1 := outcome(c.flags, c.replies, true)
		s2, d2 := outcome(c.flags, c.replies, false)
		if s1 != s2 || d1 != d2 {
			t.Errorf("%s: alone %d acknowledgements sent, %d deferred; in a batch %d sent, %d deferred", c.name, s1, d1, s2, d2)
		}
		if c.name == "asked, replies likely" && (s1 != 0 || d1 != 1) {
			t.Errorf("%s: %d acknowledgements sent, %d deferred, want 0 and 1", c.name, s1, d1)
		}
	}
	if st := e.Stats()[0]; st.MessagesRecv != seq {
		t.Errorf("%d messages received of %d", st.MessagesRecv, seq)
	}
}
