package engine

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/faulty"
	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/internal/wire"
)

// tapPort records when data fragments are handed to the port it wraps,
// and drops the first transmission of one sequence number when told to.
type tapPort struct {
	fabric.Port
	jobKey uint64

	mu      sync.Mutex
	dropSeq uint64 // drop the first transmission of this seq (0: none)
	dropped bool
	sends   []time.Time // every data fragment, first or again
}

func (p *tapPort) Send(dgs []fabric.Datagram) (int, error) {
	keep := make([]fabric.Datagram, 0, len(dgs))
	now := time.Now()
	p.mu.Lock()
	for _, d := range dgs {
		h, _, err := wire.Decode(append(append([]byte(nil), d.Head...), d.Body...), p.jobKey)
		if err == nil && h.Kind == wire.Data {
			p.sends = append(p.sends, now)
			if p.dropSeq != 0 && h.Seq == p.dropSeq && !p.dropped {
				p.dropped = true
				continue
			}
		}
		keep = append(keep, d)
	}
	p.mu.Unlock()
	if _, err := p.Port.Send(keep); err != nil {
		return 0, err
	}
	return len(dgs), nil
}

// tapPair connects engine 0, sending through a tap over a fault-injecting
// port, with engine 1 over an in-memory network.
func tapPair(t *testing.T, cfg Config) (*Engine, *Engine, *tapPort, *faulty.Port) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	fa := faulty.Wrap(a, faulty.Faults{})
	tap := &tapPort{Port: fa, jobKey: 0xfeed}
	cfg.JobKey = 0xfeed
	e0, e1 := pair(t, tap, b, cfg)
	return e0, e1, tap, fa
}

// exchange sends data from e0 to e1 and checks it arrives.
func exchange(t *testing.T, e0, e1 *Engine, tag Tag, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := e1.newRecv(0, 0, 0, tag, nil)
	e1.post(r)
	s := e0.newSend(0, 1, 0, tag, data)
	e0.post(s)
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(ctx); err != nil || !bytes.Equal(r.Data(), data) {
		t.Fatalf("message: %v", err)
	}
}

// One fragment lost in the middle of a message is sent again as soon as
// the selective acknowledgements of the fragments after it show the gap:
// a fast retransmission, with no retransmission timeout (which is set far
// above the round trip).
func TestFastRetransmit(t *testing.T) {
	e0, e1, tap, _ := tapPair(t, Config{MinRTO: 5 * time.Second, MaxRTO: 10 * time.Second, UnreachableTimeout: time.Minute})
	exchange(t, e0, e1, 1, pattern(256<<10, 1)) // round-trip samples: the timeout is now MinRTO
	p := e0.peer(1)
	p.mu.Lock()
	next := p.tx.nextSeq
	p.mu.Unlock()
	tap.mu.Lock()
	tap.dropSeq = next + 8
	tap.mu.Unlock()
	before := e0.Stats()[0]
	// Many round trips of data follow the hole, so acknowledgements keep
	// coming after it is a round trip old (a hole is taken for reordering
	// until then).
	exchange(t, e0, e1, 2, pattern(16<<20, 2))
	st := e0.Stats()[0]
	tap.mu.Lock()
	dropped := tap.dropped
	tap.mu.Unlock()
	if !dropped {
		t.Fatal("no fragment was dropped")
	}
	if n := st.FastRetrans - before.FastRetrans; n == 0 {
		t.Error("the lost fragment was not fast-retransmitted")
	}
	if n := st.Timeouts - before.Timeouts; n != 0 {
		t.Errorf("%d retransmission timeouts: the loss waited for the timer", n)
	}
	t.Logf("fast retransmissions %d, retransmits %d, timeouts %d",
		st.FastRetrans-before.FastRetrans, st.Retransmits-before.Retransmits, st.Timeouts-before.Timeouts)
}

// While every datagram is lost, the retransmission timeout doubles from
// one retransmission to the next (up to MaxRTO), so a dead link costs a
// handful of retransmissions, not one per MinRTO; when the link heals the
// message arrives.
func TestRetransmitBackoff(t *testing.T) {
	const minRTO, maxRTO = 20 * time.Millisecond, 2 * time.Second
	e0, e1, tap, fa := tapPair(t, Config{MinRTO: minRTO, MaxRTO: maxRTO, UnreachableTimeout: time.Minute})
	exchange(t, e0, e1, 1, []byte("warm"))
	before := e0.Stats()[0]
	fa.SetPartitioned(true)
	tap.mu.Lock()
	from := len(tap.sends)
	tap.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := e1.newRecv(0, 0, 0, 2, nil)
	e1.post(r)
	s := e0.newSend(0, 1, 0, 2, []byte("through a dead link"))
	e0.post(s)
	const window = 3 * time.Second
	time.Sleep(window)
	tap.mu.Lock()
	sends := append([]time.Time(nil), tap.sends[from:]...)
	tap.mu.Unlock()
	fa.SetPartitioned(false)
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(ctx); err != nil || string(r.Data()) != "through a dead link" {
		t.Fatalf("after the link healed: %v", err)
	}
	var gaps []time.Duration
	for i := 1; i < len(sends); i++ {
		gaps = append(gaps, sends[i].Sub(sends[i-1]).Round(time.Millisecond))
	}
	t.Logf("%d transmissions in %v, gaps %v; %d timeouts", len(sends), window, gaps, e0.Stats()[0].Timeouts-before.Timeouts)
	// Doubling from 20 ms: 20, 40, ... 1280 ms fit about 7 retransmissions
	// in 3 s; without backoff there would be a hundred or more.
	if len(sends) < 4 || len(sends) > 12 {
		t.Errorf("%d transmissions of one fragment in %v, want 4 to 12 (doubling from %v)", len(sends), window, minRTO)
	}
	if len(gaps) > 0 && gaps[len(gaps)-1] < 16*minRTO {
		t.Errorf("the last retransmission came %v after the one before, want at least %v", gaps[len(gaps)-1], 16*minRTO)
	}
	if e0.Stats()[0].Timeouts == before.Timeouts {
		t.Error("no retransmission timeout counted")
	}
}
