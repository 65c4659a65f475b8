package engine

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// withdrawPairs are the two ways a rendezvous send travels: the datagram
// path (mem ports reading each other's memory) and the reliable path
// (shared memory, read with process_vm_readv).
var withdrawPairs = []struct {
	name string
	make func(t testing.TB, cfg Config) (*Engine, *Engine)
}{
	{"datagram", func(t testing.TB, cfg Config) (*Engine, *Engine) {
		e0, e1, _, _ := remotePair(t, cfg)
		return e0, e1
	}},
	{"shm", func(t testing.TB, cfg Config) (*Engine, *Engine) {
		e0, e1, _, _ := shmPair(t, cfg)
		warm(t, e0, e1)
		return e0, e1
	}},
}

// warm sends a small message each way between e0 and e1: a shared-memory
// port sends by rendezvous only to a peer it has been in touch with
// (ReadableBy).
func warm(t testing.TB, e0, e1 *Engine) {
	t.Helper()
	for _, ee := range [][2]*Engine{{e0, e1}, {e1, e0}} {
		s := ee[0].newSend(8, ee[1].cfg.Proc, 8, 1, []byte("hi"))
		ee[0].post(s)
		r := ee[1].newRecv(8, ee[0].cfg.Proc, 8, 1, nil)
		ee[1].post(r)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := s.Wait(ctx)
		if err == nil {
			err = r.Wait(ctx)
		}
		cancel()
		if err != nil {
			t.Fatalf("warming up: %v", err)
		}
	}
}

// withdrawBig is a message large enough to go by rendezvous on both paths.
const withdrawBig = 1 << 20

// checkWithdrawn checks that the rendezvous message from thread 3 of e0 to
// thread 4 of e1 with tag 9 was withdrawn: the sender holds no rendezvous
// send, and the receive that follows gets the small message sent next, not
// the withdrawn one.
func checkWithdrawn(t *testing.T, e0, e1 *Engine) {
	t.Helper()
	s := e0.newSend(3, 1, 4, 9, []byte("next"))
	e0.post(s)
	r := e1.newRecv(4, 0, 3, 9, nil)
	e1.post(r)
	waitAll(t, "after the withdrawal", s, r)
	if string(r.Data()) != "next" {
		t.Fatalf("a receive after the withdrawal got %d bytes, not the message sent next", len(r.Data()))
	}
	if n := e1.RendezvousStats().Read; n != 0 {
		t.Fatalf("the receiver read %d rendezvous messages, none expected", n)
	}
	e0.rndv.mu.Lock()
	left := len(e0.rndv.sends)
	e0.rndv.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d rendezvous sends left in the sender's table", left)
	}
}

// A blocking Send of a rendezvous message whose context ends while no
// receive is posted returns the context's error, soon, and the receiver
// never sees the message.
func TestRendezvousSendDeadline(t *testing.T) {
	for _, pp := range withdrawPairs {
		t.Run(pp.name, func(t *testing.T) {
			e0, e1 := pp.make(t, Config{})
			data := pattern(withdrawBig, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			sent := make(chan error, 1)
			go func() { sent <- e0.Endpoint(3).Send(ctx, 1, 4, 9, data) }()
			select {
			case err := <-sent:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Send whose deadline passed: %v, want the context's error", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Send did not return when its context ended")
			}
			if e0.RendezvousStats().Announced != 1 {
				t.Fatal("not sent by rendezvous")
			}
			checkWithdrawn(t, e0, e1)
		})
	}
}

// Cancel of a rendezvous send whose announcement has arrived withdraws it:
// the send completes with ErrCanceled, and only then.
func TestRendezvousCancelAnnounced(t *testing.T) {
	for _, pp := range withdrawPairs {
		t.Run(pp.name, func(t *testing.T) {
			e0, e1 := pp.make(t, Config{})
			s := e0.newSend(3, 1, 4, 9, pattern(withdrawBig, 2))
			e0.post(s)
			waitProbe(t, e1) // the announcement waits at the receiver
			if e0.RendezvousStats().Announced != 1 {
				t.Fatal("not sent by rendezvous")
			}
			s.Cancel()
			s.Cancel() // asked once; a second Cancel changes nothing
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := s.Wait(ctx); !errors.Is(err, ErrCanceled) {
				t.Fatalf("cancelled rendezvous send: %v, want ErrCanceled", err)
			}
			if _, ok := e1.iprobe(4, 0, 3, 9); ok {
				t.Fatal("the withdrawn message still waits at the receiver")
			}
			checkWithdrawn(t, e0, e1)
		})
	}
}

// A withdrawal races the receive that matches it: exactly one wins. Either
// the message is received and the send succeeds, or the send is cancelled
// and the receive gets the message sent next. Every third round the
// withdrawal is answered before the receive is posted: the send is then
// cancelled.
func TestRendezvousWithdrawRace(t *testing.T) {
	for _, pp := range withdrawPairs {
		t.Run(pp.name, func(t *testing.T) {
			e0, e1 := pp.make(t, Config{})
			data := pattern(withdrawBig, 3)
			rounds := 60
			if testing.Short() {
				rounds = 15
			}
			var won [2]int
			for i := range rounds {
				s := e0.newSend(3, 1, 4, 9, data)
				e0.post(s)
				if i%4 != 0 { // else the withdrawal may cross its announcement
					waitProbe(t, e1)
				}
				r := e1.newRecv(4, 0, 3, 9, make([]byte, withdrawBig))
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				if i%3 == 0 {
					// Not a race: the withdrawal is answered before the
					// receive is posted, which must not get the message.
					s.Cancel()
					s.Wait(ctx)
					e1.post(r)
				} else {
					var wg sync.WaitGroup
					wg.Add(2)
					go func() { defer wg.Done(); s.Cancel() }()
					go func() { defer wg.Done(); e1.post(r) }()
					wg.Wait()
				}
				serr := s.Wait(ctx)
				cancel()
				next := e0.newSend(3, 1, 4, 9, []byte("next"))
				e0.post(next)
				switch {
				case serr == nil:
					won[0]++
					waitAll(t, "received", r)
					if !bytes.Equal(r.Data(), data) {
						t.Fatalf("round %d: send succeeded but the receive got %d bytes", i, len(r.Data()))
					}
					r2 := e1.newRecv(4, 0, 3, 9, nil)
					e1.post(r2)
					waitAll(t, "next", r2, next)
					if string(r2.Data()) != "next" {
						t.Fatalf("round %d: the message sent next came as %d bytes", i, len(r2.Data()))
					}
				case errors.Is(serr, ErrCanceled):
					won[1]++
					waitAll(t, "withdrawn", r, next)
					if string(r.Data()) != "next" {
						t.Fatalf("round %d: send cancelled but the receive got %d bytes", i, len(r.Data()))
					}
				default:
					t.Fatalf("round %d: send: %v", i, serr)
				}
			}
			if _, ok := e1.iprobe(4, 0, 3, 9); ok {
				t.Fatal("a message was left at the receiver")
			}
			e0.rndv.mu.Lock()
			left := len(e0.rndv.sends)
			e0.rndv.mu.Unlock()
			if left != 0 {
				t.Fatalf("%d rendezvous sends left in the sender's table", left)
			}
			t.Logf("%d received, %d withdrawn", won[0], won[1])
			if won[1] < (rounds+2)/3 {
				t.Fatalf("%d of %d sends withdrawn, at least %d expected", won[1], rounds, (rounds+2)/3)
			}
		})
	}
}

// The receiver is gone when the send's context ends: no answer to the
// withdrawal comes, and the send fails when the peer is found down.
func TestRendezvousWithdrawReceiverGone(t *testing.T) {
	t.Run("datagram", func(t *testing.T) {
		e0, e1, _, b := remotePair(t, Config{UnreachableTimeout: 500 * time.Millisecond})
		testWithdrawGone(t, e0, e1, func() { b.Close() })
	})
	t.Run("shm", func(t *testing.T) {
		e0, e1, _, b := shmPair(t, Config{UnreachableTimeout: 500 * time.Millisecond})
		warm(t, e0, e1)
		testWithdrawGone(t, e0, e1, func() { b.Close() })
	})
}

func testWithdrawGone(t *testing.T, e0, e1 *Engine, kill func()) {
	data := pattern(withdrawBig, 4)
	s := e0.newSend(3, 1, 4, 9, data)
	e0.post(s)
	waitProbe(t, e1)
	if e0.RendezvousStats().Announced != 1 {
		t.Fatal("not sent by rendezvous")
	}
	kill()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	sent := make(chan error, 1)
	go func() { sent <- s.waitOrCancel(ctx) }()
	select {
	case err := <-sent:
		if err == nil {
			t.Fatal("send to a receiver that is gone succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("send to a receiver that is gone did not end")
	}
	e0.rndv.mu.Lock()
	left := len(e0.rndv.sends)
	e0.rndv.mu.Unlock()
	if left != 0 {
		t.Fatal("rendezvous send left in the table")
	}
}
