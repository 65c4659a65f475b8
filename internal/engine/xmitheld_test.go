package engine

import (
	"context"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/mem"
)

// A send acknowledged while a retransmission of its data is still being
// handed to the fabric completes only once that transmission has read the
// data: after Send returns, the engine no longer reads the caller's buffer,
// which the caller may at once reuse (for a receive, say).
func TestAckDuringRetransmissionWaitsForIt(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	gateA := &gatePort{Port: a, entered: make(chan struct{}), open: make(chan struct{})}
	gateB := &gatePort{Port: b, entered: make(chan struct{}), open: make(chan struct{}), armed: true}
	e0, _ := pair(t, gateA, gateB, Config{})
	defer func() {
		for _, g := range []*gatePort{gateA, gateB} {
			select {
			case <-g.open:
			default:
				close(g.open)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	data := []byte("the caller's buffer")
	r := e0.newSend(0, 1, 0, 5, data)
	r.ackNow = true
	e0.post(r)

	// The message reached process 1, whose acknowledgement is held in its
	// port; process 0 times out and sends the message again, and that
	// transmission is held in its port, still to read the data.
	select {
	case <-gateB.entered:
	case <-ctx.Done():
		t.Fatal("process 1 never acknowledged")
	}
	gateA.mu.Lock()
	gateA.armed = true
	gateA.mu.Unlock()
	select {
	case <-gateA.entered:
	case <-ctx.Done():
		t.Fatal("process 0 never sent the message again")
	}

	// The acknowledgement arrives and is taken while the transmission is
	// held.
	acks := e0.Stats()[0].AcksRecv
	close(gateB.open)
	for e0.Stats()[0].AcksRecv == acks {
		if ctx.Err() != nil {
			t.Fatal("process 0 never took the acknowledgement")
		}
		time.Sleep(time.Millisecond)
	}
	p := e0.peer(1)
	for {
		p.mu.Lock()
		inFlight := p.tx.rlen
		p.mu.Unlock()
		if inFlight == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the acknowledgement retired nothing")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // whatever follows the acknowledgement has run
	if done, _ := r.Test(); done {
		t.Fatal("the send completed while a transmission still read its data")
	}

	close(gateA.open)
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if s := e0.Stats()[0].MessagesSent; s != 1 {
		t.Errorf("MessagesSent = %d, want 1", s)
	}
}

// A send that completes with an error (cancelled, its peer lost, the
// engine closed) while a transmission of its data is still being handed to
// the fabric completes only once that transmission has read the data, as
// an acknowledged one does: after Wait returns, the engine no longer reads
// the caller's buffer.
func TestFailedSendWaitsForTransmission(t *testing.T) {
	for _, how := range []string{"cancel", "peer lost", "close"} {
		t.Run(how, func(t *testing.T) {
			n := mem.NewNetwork()
			a, _ := n.Listen("a")
			b, _ := n.Listen("b")
			gate := &gatePort{Port: a, entered: make(chan struct{}), open: make(chan struct{}), armed: true}
			e0, _ := pair(t, gate, b, Config{})
			opened := false
			release := func() {
				if !opened {
					opened = true
					close(gate.open)
				}
			}
			defer release()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			data := []byte("the caller's buffer")
			r := e0.newSend(0, 1, 0, 5, data)
			posted := make(chan struct{})
			go func() {
				defer close(posted)
				e0.post(r) // transmits at once, held in the port
			}()
			select {
			case <-gate.entered:
			case <-ctx.Done():
				t.Fatal("the message never reached the port")
			}

			ended := make(chan struct{})
			go func() {
				defer close(ended)
				switch how {
				case "cancel":
					r.Cancel()
				case "peer lost":
					e0.peer(1).fail(&PeerDownError{Proc: 1, Reason: "test"})
				case "close":
					e0.Close()
				}
			}()
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				if how != "close" {
					t.Fatal(how + " did not return while a transmission was held")
				}
				// Close may wait for what is being sent: let it go.
			}
			if done, err := r.Test(); done {
				t.Fatalf("the send completed (%v) while a transmission still read its data", err)
			}

			release()
			if err := r.Wait(ctx); err == nil {
				t.Fatal("the send succeeded")
			} else if ctx.Err() != nil {
				t.Fatalf("the send never completed once its transmission returned (%v)", err)
			}
			for _, c := range []chan struct{}{posted, ended} {
				select {
				case <-c:
				case <-ctx.Done():
					t.Fatal("the post or the " + how + " never returned")
				}
			}
		})
	}
}

// A waiter that parks on a held send while the transmission that finishes
// it is between its look for a waiter and the send's completion sees the
// completion under way and waits it out: it does not block on a signal
// the transmission, having seen no waiter, never sends. (The send was
// left held, and the waiter found it held and blocked for good.)
func TestHeldSendWakesLateWaiter(t *testing.T) {
	for _, how := range []string{"Wait", "Done"} {
		t.Run(how, func(t *testing.T) {
			r := newRequest(nil, sendReq)
			r.xmit.Add(1) // a transmission reads the data
			if !r.complete(ErrCanceled) {
				t.Fatal("complete did not take the send")
			}
			if done, _ := r.Test(); done {
				t.Fatal("the send completed while a transmission still read its data")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			woken := make(chan error, 1)
			finishHook = func() {
				go func() {
					switch how {
					case "Wait":
						woken <- r.chanWait(ctx)
					case "Done":
						select {
						case <-r.Done():
							woken <- r.Err()
						case <-ctx.Done():
							woken <- ctx.Err()
						}
					}
				}()
				// The waiter parks, then looks at the state.
				for i := 0; !r.parked.Load(); i++ {
					if i == 5000 {
						t.Error("the waiter never parked")
						return
					}
					time.Sleep(time.Millisecond)
				}
				time.Sleep(20 * time.Millisecond)
			}
			defer func() { finishHook = nil }()
			if !r.xmitDone() {
				t.Fatal("the last transmission did not finish the send")
			}
			r.finish()
			finishHook = nil
			select {
			case err := <-woken:
				if err != ErrCanceled {
					t.Fatalf("the waiter returned %v, want %v", err, ErrCanceled)
				}
				if ctx.Err() != nil {
					t.Fatal("the waiter was woken only by its context's end")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter never returned")
			}
		})
	}
}
