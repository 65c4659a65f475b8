package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
)

// gatePort holds the first Send after it is armed until it is opened,
// and counts the Sends.
type gatePort struct {
	fabric.Port
	mu      sync.Mutex
	armed   bool
	entered chan struct{} // closed when the held Send has begun
	open    chan struct{}
	sends   int
}

func (p *gatePort) Send(dgs []fabric.Datagram) (int, error) {
	p.mu.Lock()
	p.sends++
	hold := p.armed
	p.armed = false
	p.mu.Unlock()
	if hold {
		close(p.entered)
		<-p.open
	}
	return p.Port.Send(dgs)
}

// A thread that finds another transmitting to the same process leaves its
// messages to that one and returns at once, and the transmitting thread
// sends them before it goes: many threads posting to one process neither
// park behind each other's system calls nor make one each.
func TestPumpLeavesToTransmitter(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	gate := &gatePort{Port: a, entered: make(chan struct{}), open: make(chan struct{})}
	// The first message's retransmission timeout must not expire while
	// it is held (a stalled thread, a loaded machine): the window would
	// then close to minCwnd and rightly keep the rest queued.
	e0, e1 := pair(t, gate, b, Config{MinRTO: time.Hour, MaxRTO: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := e0.peer(1)
	if p == nil {
		t.Fatal("no peer 1")
	}

	gate.mu.Lock()
	gate.armed = true
	gate.mu.Unlock()
	first := make(chan error, 1)
	go func() { first <- e0.Post(0, 1, 0, 5, []byte("first")) }()
	select {
	case <-gate.entered:
	case <-ctx.Done():
		t.Fatal("the first message never reached the port")
	}

	// The first Post is inside the port's Send, holding xmitMu: these
	// must queue and return, not wait for it.
	const more = 20
	posted := make(chan error, 1)
	go func() {
		for i := range more {
			if err := e0.Post(0, 1, 0, 5, fmt.Appendf(nil, "m%d", i)); err != nil {
				posted <- err
				return
			}
		}
		posted <- nil
	}()
	select {
	case err := <-posted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		close(gate.open)
		t.Fatal("Post waited for another thread's transmission to the same process")
	}
	gate.mu.Lock()
	sends := gate.sends
	gate.mu.Unlock()
	if sends != 1 {
		t.Errorf("%d Sends while one was under way, want 1", sends)
	}

	close(gate.open)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The first Post transmitted what the others queued before it
	// returned: nothing is left for a timer to send.
	p.mu.Lock()
	left := p.tx.queue.head != nil
	p.mu.Unlock()
	if left {
		t.Fatal("messages queued while another thread transmitted were left in the queue")
	}
	gate.mu.Lock()
	sends = gate.sends
	gate.mu.Unlock()
	if sends > 3 {
		t.Errorf("%d Sends for %d messages queued behind one", sends, more+1)
	}

	buf := make([]byte, 16)
	for i := range more + 1 {
		want := "first"
		if i > 0 {
			want = fmt.Sprintf("m%d", i-1)
		}
		r := e1.newRecv(0, 0, 0, 5, buf)
		e1.post(r)
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if got := string(r.Data()); got != want {
			t.Fatalf("message %d is %q, want %q", i, got, want)
		}
	}
}
