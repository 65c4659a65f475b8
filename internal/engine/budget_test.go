package engine

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/pcor-go/pcor/internal/wire"
)

// The receive budget over real UDP sockets: a bound on the storage held for
// messages no receive has taken, whatever their size or number of senders,
// and a forged header costs what arrived.

// budgetMesh makes n engines (procs 0..n-1) with one blocking UDP port each,
// all peers of each other; engine 0 is configured with rx.
func budgetMesh(t *testing.T, n int, rx Config) []*Engine {
	t.Helper()
	es := make([]*Engine, n)
	eps := make([]string, n)
	for i := range es {
		cfg := Config{Proc: ProcID(i), JobKey: 0xbeef}
		if i == 0 {
			cfg = rx
			cfg.Proc, cfg.JobKey = 0, 0xbeef
		}
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pt := udpPort(t)
		if _, err := e.AddPort(pt, Blocking); err != nil {
			t.Fatal(err)
		}
		es[i], eps[i] = e, pt.LocalEndpoint().String()
		t.Cleanup(func() { e.Close() })
	}
	for i, e := range es {
		for j := range es {
			if i != j {
				if err := e.SetPeer(ProcID(j), 0, eps[j]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return es
}

// watchBudget samples e's budget every 200 µs until stop is closed and
// returns the highest value seen.
func watchBudget(e *Engine, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		peak := int64(0)
		for {
			peak = max(peak, e.BudgetUsed())
			select {
			case <-stop:
				out <- peak
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	return out
}

// Messages larger than the receiver's whole budget, from one sender and
// from several at once, to a receiver that posts no receive for a while:
// the budget held never exceeds RecvBudget (the senders are told BUSY),
// and once receives are posted, with a buffer or without, every message
// arrives intact and the budget is all given back.
func TestBudgetBoundsLargeMessages(t *testing.T) {
	const budget = 1 << 20
	for _, tc := range []struct {
		name    string
		senders int
		size    int
		withBuf bool
	}{
		{"one-sender-into-buffer", 1, 8 << 20, true},
		{"one-sender-no-buffer", 1, 8 << 20, false},
		{"three-senders", 3, 3 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := budgetMesh(t, 1+tc.senders, Config{RecvBudget: budget})
			rx := es[0]
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			stop := make(chan struct{})
			peak := watchBudget(rx, stop)
			var sends []*Request
			for i := 1; i <= tc.senders; i++ {
				s := es[i].newSend(0, 0, 0, 7, pattern(tc.size, uint64(i)))
				es[i].post(s)
				sends = append(sends, s)
			}
			// Let the senders run into the budget before any receive.
			deadline := time.Now().Add(30 * time.Second)
			for rx.Stats()[0].BusySent < 10 {
				if time.Now().After(deadline) {
					t.Fatal("no sender was told BUSY")
				}
				time.Sleep(time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			got := map[ProcID]bool{}
			for range tc.senders {
				var buf []byte
				if tc.withBuf {
					buf = make([]byte, tc.size)
				}
				r := rx.newRecv(0, AnyProc, AnyThread, 7, buf)
				rx.post(r)
				if err := r.Wait(ctx); err != nil {
					t.Fatal(err)
				}
				p, _ := r.Source()
				if got[p] || !bytes.Equal(r.Data(), pattern(tc.size, uint64(p))) {
					t.Fatalf("message from %d differs (or came twice)", p)
				}
				got[p] = true
			}
			for _, s := range sends {
				if err := s.Wait(ctx); err != nil {
					t.Fatal(err)
				}
			}
			close(stop)
			if p := <-peak; p > budget {
				t.Errorf("the receiver held %d bytes for unreceived messages, budget %d", p, budget)
			} else {
				t.Logf("peak budget held %d of %d bytes; %d BUSY sent", p, budget, rx.Stats()[0].BusySent)
			}
			if u := rx.BudgetUsed(); u != 0 {
				t.Errorf("%d bytes of budget still held after every message was received", u)
			}
		})
	}
}

// forgeFirst sends, from conn to the engine at ep, the first fragment of a
// message that claims total bytes and never sends the rest, as process 1
// of incarnation inc.
func forgeFirst(t *testing.T, conn *net.UDPConn, ep string, inc uint32, total uint64) {
	t.Helper()
	const frag = 1200
	h := wire.Header{Kind: wire.Data, JobKey: 0xbeef, SrcProc: 1, DstProc: 0, Tag: 7, FragSize: frag,
		Total: total, Hops: wire.DefaultHops, SrcInc: inc}
	body := make([]byte, frag)
	pkt := make([]byte, wire.HeaderSize+frag)
	h.Encode(pkt[:wire.HeaderSize], body)
	copy(pkt[wire.HeaderSize:], body)
	to, err := net.ResolveUDPAddr("udp", ep)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.WriteToUDP(pkt, to); err != nil {
		t.Fatal(err)
	}
}

// hello sends a Hello from conn as process 1 of incarnation inc.
func hello(t *testing.T, conn *net.UDPConn, ep string, inc uint32) {
	t.Helper()
	h := wire.Header{Kind: wire.Hello, JobKey: 0xbeef, SrcProc: 1, DstProc: 0, Hops: wire.DefaultHops, SrcInc: inc}
	pkt := make([]byte, wire.HeaderSize)
	h.Encode(pkt, nil)
	to, _ := net.ResolveUDPAddr("udp", ep)
	if _, err := conn.WriteToUDP(pkt, to); err != nil {
		t.Fatal(err)
	}
}

// A header that claims a 1 GiB message and sends one fragment holds at
// most one chunk of the receiver's budget, honest senders are not held
// back by it, and the chunk is given back when the forger's incarnation
// changes or it stays silent for the unreachable timeout.
func TestForgedHeaderCostsWhatArrived(t *testing.T) {
	for _, end := range []string{"new-incarnation", "silence"} {
		t.Run(end, func(t *testing.T) {
			const budget = 4 << 20
			rx, err := New(Config{Proc: 0, JobKey: 0xbeef, RecvBudget: budget, UnreachableTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rx.Close() })
			pt := udpPort(t)
			rx.AddPort(pt, Blocking)
			ep := pt.LocalEndpoint().String()
			conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := rx.SetPeer(1, 0, conn.LocalAddr().String()); err != nil {
				t.Fatal(err)
			}
			honest, err := New(Config{Proc: 2, JobKey: 0xbeef, UnreachableTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { honest.Close() })
			hp := udpPort(t)
			honest.AddPort(hp, Blocking)
			honest.SetPeer(0, 0, ep)
			rx.SetPeer(2, 0, hp.LocalEndpoint().String())

			forgeFirst(t, conn, ep, 77, 1<<30)
			deadline := time.Now().Add(10 * time.Second)
			for rx.BudgetUsed() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the forged fragment was never taken")
				}
				time.Sleep(time.Millisecond)
			}
			if u := rx.BudgetUsed(); u > chunkSize {
				t.Fatalf("one forged fragment holds %d bytes of budget (at most %d)", u, chunkSize)
			}
			// An honest 3 MiB message is accepted without a receive posted.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			s := honest.newSend(0, 0, 0, 7, pattern(3<<20, 2))
			honest.post(s)
			if err := s.Wait(ctx); err != nil {
				t.Fatalf("honest send: %v", err)
			}
			if b := rx.Stats()[0].BusySent; b != 0 {
				t.Errorf("the honest sender was told BUSY %d times", b)
			}
			held := rx.BudgetUsed()
			if held < 3<<20 || held > 3<<20+2*chunkSize {
				t.Errorf("%d bytes held for a 3 MiB message and a forged fragment", held)
			}
			start := time.Now()
			if end == "new-incarnation" {
				hello(t, conn, ep, 78)
			}
			for rx.BudgetUsed() != 3<<20 {
				if time.Since(start) > 10*time.Second {
					t.Fatalf("the forged message still holds %d bytes after %v", rx.BudgetUsed()-3<<20, time.Since(start))
				}
				time.Sleep(time.Millisecond)
			}
			t.Logf("forged message's budget given back %v after its %s", time.Since(start).Round(time.Millisecond), end)
			r := rx.newRecv(0, 2, 0, 7, nil)
			rx.post(r)
			if err := r.Wait(ctx); err != nil || !bytes.Equal(r.Data(), pattern(3<<20, 2)) {
				t.Fatalf("honest message: %v", err)
			}
			if u := rx.BudgetUsed(); u != 0 {
				t.Errorf("%d bytes still held", u)
			}
		})
	}
}

// A message between threads of one process larger than the whole budget
// waits (its send does not complete) until its receive is posted, and then
// goes straight to it; smaller ones are held within the budget.
func TestLocalBudget(t *testing.T) {
	const budget = 1 << 20
	e, err := New(Config{Proc: 0, JobKey: 1, RecvBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	small := e.newSend(1, 0, 2, 3, pattern(budget/2, 1))
	e.post(small)
	if err := small.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	big := e.newSend(1, 0, 2, 4, pattern(2*budget, 2))
	e.post(big)
	time.Sleep(100 * time.Millisecond)
	if done, _ := big.Test(); done {
		t.Fatal("a local message larger than the budget was accepted with no receive posted")
	}
	if u := e.BudgetUsed(); u > budget {
		t.Fatalf("%d bytes held, budget %d", u, budget)
	}
	r := e.newRecv(2, 0, 1, 4, nil)
	e.post(r)
	if err := r.Wait(ctx); err != nil || !bytes.Equal(r.Data(), pattern(2*budget, 2)) {
		t.Fatalf("large local message: %v", err)
	}
	if err := big.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	r = e.newRecv(2, 0, 1, 3, nil)
	e.post(r)
	if err := r.Wait(ctx); err != nil || !bytes.Equal(r.Data(), pattern(budget/2, 1)) {
		t.Fatalf("small local message: %v", err)
	}
	if u := e.BudgetUsed(); u != 0 {
		t.Fatalf("%d bytes still held", u)
	}
}
