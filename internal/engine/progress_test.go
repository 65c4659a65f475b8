package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/udp"
)

// Caller-driven progress over real UDP sockets (the fabric that can be
// driven by callers).

var modes = []Mode{Blocking, Polling}

func udpPort(t testing.TB) *udp.Port {
	t.Helper()
	p, err := udp.Listen("127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// udpEngines makes n engines (procs 0..n-1), each with one UDP port in
// mode, all peers of each other.
func udpEngines(t testing.TB, n int, mode Mode) []*Engine {
	t.Helper()
	return udpEnginesWith(t, n, mode, Config{})
}

// udpEnginesWith is udpEngines with the settings of cfg (Proc and JobKey
// are set for each engine).
func udpEnginesWith(t testing.TB, n int, mode Mode, cfg Config) []*Engine {
	t.Helper()
	es := make([]*Engine, n)
	ports := make([]*udp.Port, n)
	for i := range es {
		c := cfg
		c.Proc, c.JobKey = ProcID(i), 0xbeef
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = udpPort(t)
		if _, err := e.AddPort(ports[i], mode); err != nil {
			t.Fatal(err)
		}
		es[i] = e
		t.Cleanup(func() { e.Close() })
	}
	for i, e := range es {
		for j := range es {
			if i != j {
				if err := e.SetPeer(ProcID(j), 0, ports[j].LocalEndpoint().String()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return es
}

func send(t testing.TB, e *Engine, src ThreadID, dst ProcID, dth ThreadID, tag Tag, data []byte) *Request {
	r := newRequest(e, sendReq)
	r.setSend(src, dst, dth, tag, data)
	r.ackNow = true
	e.post(r)
	return r
}

func recv(e *Engine, dst ThreadID, src ProcID, sth ThreadID, tag Tag) *Request {
	r := newRequest(e, recvReq)
	r.setRecv(dst, src, sth, tag, nil)
	e.post(r)
	return r
}

// waitLead waits until a thread drives e's port.
func waitLead(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.ports[0].prog.leads.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the waiting thread never drove the port")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// A ping-pong is driven by the waiting threads: their port's token is
// taken by them (leads) and the data reaches them without the dispatcher.
func TestDrivePingPong(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			es := udpEngines(t, 2, mode)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			const n = 200
			done := echo(t, ctx, es[1], n)
			pingPong(t, ctx, es[0], n)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			for i, e := range es {
				st := e.Stats()[0]
				if st.Leads == 0 {
					t.Errorf("engine %d: no thread ever drove the port (stats %+v)", i, st)
				}
				if st.ThreadBatches == 0 {
					t.Errorf("engine %d: no datagram received by a waiting thread (stats %+v)", i, st)
				}
				if st.ThreadBatches+st.DispatcherBatches > st.FragsRecv {
					t.Errorf("engine %d: %d+%d non-empty batches of %d datagrams", i, st.ThreadBatches, st.DispatcherBatches, st.FragsRecv)
				}
				if st.Steals > st.Leads {
					t.Errorf("engine %d: %d of %d leads stolen", i, st.Steals, st.Leads)
				}
				if mode == Polling && st.DriverSleeps != 0 {
					t.Errorf("engine %d: a polling driver slept %d times", i, st.DriverSleeps)
				}
			}
		})
	}
}

// A driving thread whose context ends returns with its error, and the port
// goes on: the dispatcher takes it back and a later receive gets its
// message.
func TestDriveCancel(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			es := udpEngines(t, 2, mode)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			r := recv(es[0], 0, 1, 0, 1)
			start := time.Now()
			err := r.Wait(ctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Wait = %v, want the context's deadline", err)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Fatalf("the ended context was noticed after %v", el)
			}
			r.Cancel()
			if r.Err() != ErrCanceled {
				t.Fatalf("cancelled receive: %v", r.Err())
			}
			// Unattended now: the dispatcher takes the port back and
			// handles a message no thread waits for yet.
			ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel2()
			s := send(t, es[1], 0, 0, 0, 1, []byte("late"))
			if err := s.Wait(ctx2); err != nil {
				t.Fatalf("send to a port no thread drives: %v", err)
			}
			r = recv(es[0], 0, 1, 0, 1)
			if err := r.Wait(ctx2); err != nil || string(r.Data()) != "late" {
				t.Fatalf("receive after the cancel: %q, %v", r.Data(), err)
			}
		})
	}
}

// Close ends a thread driving the port: its request fails with ErrClosed,
// and no goroutine of the engine is left.
func TestDriveClose(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			before := runtime.NumGoroutine()
			es := udpEngines(t, 2, mode)
			r := recv(es[0], 0, 1, 0, 1)
			errc := make(chan error, 1)
			go func() { errc <- r.Wait(context.Background()) }()
			waitLead(t, es[0])
			es[0].Close()
			deadline := time.Now().Add(10 * time.Second)
			select {
			case err := <-errc:
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("Wait after Close = %v, want ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Close did not end the driving thread's wait")
			}
			es[1].Close()
			for runtime.NumGoroutine() > before {
				if time.Now().After(deadline) {
					t.Fatalf("goroutines: %d after Close, %d before", runtime.NumGoroutine(), before)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// A gateway whose threads drove its port once and then stopped calling in
// still forwards: the dispatcher takes the unattended port back.
func TestDriveGatewayForwardsWithoutThreads(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			es := udpEngines(t, 3, mode)
			a, gw, c := es[0], es[1], es[2]
			// a and c reach each other only through the gateway.
			gwEP := gw.ports[0].fab.LocalEndpoint().String()
			if err := a.SetPeer(2, 0, gwEP); err != nil {
				t.Fatal(err)
			}
			if err := c.SetPeer(0, 0, gwEP); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// A thread of the gateway drives its port for one message.
			r := recv(gw, 0, 0, 0, 1)
			errc := make(chan error, 1)
			go func() { errc <- r.Wait(ctx) }()
			waitLead(t, gw)
			s := send(t, a, 0, 1, 0, 1, []byte("to the gateway"))
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if err := s.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			// Now no thread of the gateway calls in.
			for i, n := range []int{1, 70000, 1 << 20} {
				data := pattern(n, uint64(n))
				s := send(t, a, 0, 2, 0, Tag(10+i), data)
				r := recv(c, 0, 0, 0, Tag(10+i))
				if err := r.Wait(ctx); err != nil {
					t.Fatalf("%d B through the gateway: %v", n, err)
				}
				if err := s.Wait(ctx); err != nil {
					t.Fatalf("%d B through the gateway, send: %v", n, err)
				}
				if !bytes.Equal(r.Data(), data) {
					t.Fatalf("%d B through the gateway: data differs", n)
				}
			}
			st := gw.Stats()[0]
			if st.Forwarded == 0 {
				t.Fatal("nothing was forwarded")
			}
			// The port went back to the dispatcher (left unattended, or
			// given up by a driver that waited long), which received the
			// datagrams to forward.
			if st.Reclaims+st.GiveBacks == 0 || st.DispatcherBatches == 0 {
				t.Fatalf("the dispatcher never took the port back: stats %+v", st)
			}
		})
	}
}

// A thousand threads wait at once on one port: one drives it, the others
// are served by it or by the dispatcher, and every one gets its message.
func TestDriveThousandWaiters(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			es := udpEngines(t, 2, mode)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			const n = 1000
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := recv(es[1], ThreadID(100+i), 0, ThreadID(i), 3)
					if err := r.Wait(ctx); err != nil {
						errs <- fmt.Errorf("waiter %d: %w", i, err)
						return
					}
					if want := fmt.Sprint(i); string(r.Data()) != want {
						errs <- fmt.Errorf("waiter %d got %q", i, r.Data())
					}
				}()
			}
			sends := make([]*Request, n)
			for i := 0; i < n; i++ {
				sends[i] = es[0].Endpoint(ThreadID(i)).Isend(1, ThreadID(100+i), 3, []byte(fmt.Sprint(i)))
			}
			for i, s := range sends {
				if err := s.Wait(ctx); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// A receive from any process drives the port data last came through, not
// the first port: here each engine's first port carries nothing and the
// ping-pong goes through the second, so a receive from any process that
// drove the first would leave every message to the second port's
// dispatcher.
func TestDriveAnyFollowsData(t *testing.T) {
	es := make([]*Engine, 2)
	ports := make([][2]*udp.Port, 2)
	for i := range es {
		e, err := New(Config{Proc: ProcID(i), JobKey: 0xbeef})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		for j := range ports[i] {
			ports[i][j] = udpPort(t)
			if _, err := e.AddPort(ports[i][j], Blocking); err != nil {
				t.Fatal(err)
			}
		}
		es[i] = e
	}
	for i, e := range es {
		if err := e.SetPeer(ProcID(1-i), 1, ports[1-i][1].LocalEndpoint().String()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 200
	done := make(chan error, 1)
	go func() {
		// The replies are not waited for one by one, so that each
		// receive waits for its message (a reply's Wait would drive the
		// second port until the next message came).
		var replies []*Request
		for i := 0; i < n; i++ {
			r := recv(es[1], 1, AnyProc, AnyThread, 5)
			if err := r.Wait(ctx); err != nil {
				done <- err
				return
			}
			replies = append(replies, send(t, es[1], 1, 0, 0, 6, r.Data()))
		}
		for _, r := range replies {
			if err := r.Wait(ctx); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	pingPong(t, ctx, es[0], n)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := es[1].Stats()
	// The first receive, before any data came, drives the first port.
	if st[0].Leads > 1 {
		t.Errorf("receives from any process drove the idle first port %d times", st[0].Leads)
	}
	// Some batches fall to the dispatcher on a loaded machine (a driver
	// whose message is long in coming gives the port back, a
	// retransmission comes while nobody waits): 55 of 200 at load 23.
	// A receive driving the first port left every one to it (200 or more).
	if st[1].DispatcherBatches > n*3/4 {
		t.Errorf("%d of %d messages' batches received by the dispatcher, not by the waiting thread (stats %+v)",
			st[1].DispatcherBatches, n, st[1])
	}
}

// A receive that waits long (one posted to learn of a peer's end) stops
// counting as a waiter of its port: the threads of a ping-pong through the
// port still take the token from the dispatcher and receive their own
// messages.
func TestDriveLongWaiterLetsOthersDrive(t *testing.T) {
	es := udpEngines(t, 2, Blocking)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	long := recv(es[0], 7, 1, 9, 99) // nothing ever matches it
	longDone := make(chan error, 1)
	lctx, lcancel := context.WithCancel(ctx)
	go func() { longDone <- long.Wait(lctx) }()
	time.Sleep(3 * driveIdle) // it drove, gave up and waits long
	const n = 200
	done := echo(t, ctx, es[1], n)
	before := es[0].Stats()[0]
	for i := 0; i < n; i++ {
		if err := send(t, es[0], 0, 1, 1, 5, []byte{byte(i)}).Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := recv(es[0], 0, 1, 1, 6).Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	after := es[0].Stats()[0]
	// Kept with the dispatcher by the long waiter, the replies and
	// acknowledgements of the n round trips are about 1.5n dispatcher
	// batches; driven by the threads, a few, and up to about n/2 on a
	// loaded machine, where a thread descheduled between its send and
	// its receive leaves the port to the dispatcher (progressGrace).
	if d := after.DispatcherBatches - before.DispatcherBatches; d > 3*n/4 {
		t.Errorf("%d batches of %d round trips received by the dispatcher while a receive waited long (thread batches %d)",
			d, n, after.ThreadBatches-before.ThreadBatches)
	}
	lcancel()
	if err := <-longDone; !errors.Is(err, context.Canceled) {
		t.Errorf("long receive: %v", err)
	}
	long.Cancel()
}

// echo answers n messages to thread 1 of e (tag 5, from thread 0 of
// process 0) with the same bytes (tag 6), each reply waited for; the
// channel has nil, or the first error, at the end.
func echo(t *testing.T, ctx context.Context, e *Engine, n int) <-chan error {
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			r := recv(e, 1, 0, 0, 5)
			if err := r.Wait(ctx); err != nil {
				done <- err
				return
			}
			if err := send(t, e, 1, 0, 0, 6, r.Data()).Wait(ctx); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

// pingPong makes n round trips from thread 0 of e to echo's thread of
// process 1 and checks each reply.
func pingPong(t *testing.T, ctx context.Context, e *Engine, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		msg := []byte(fmt.Sprint(i))
		if err := send(t, e, 0, 1, 1, 5, msg).Wait(ctx); err != nil {
			t.Fatal(err)
		}
		r := recv(e, 0, 1, 1, 6)
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Data(), msg) {
			t.Fatalf("round %d: %q", i, r.Data())
		}
	}
}

// waitParked waits until e's polling dispatcher parks (pollIdle without a
// datagram).
func waitParked(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !e.ports[0].prog.parked.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the polling dispatcher of an idle port never parked")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// A polling dispatcher whose port receives nothing for pollIdle parks in
// the fabric; a message then still reaches a process where no thread
// waits (the dispatcher wakes to receive it), and a thread that waits for
// a message takes the token from the parked dispatcher at once, which
// leaves the fabric, so that the thread receives its message itself.
func TestPollingDispatcherParksWhenIdle(t *testing.T) {
	es := udpEngines(t, 2, Polling)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitParked(t, es[1])
	// Nobody waits on engine 1: its dispatcher receives.
	if err := send(t, es[0], 0, 1, 0, 1, []byte("to a parked dispatcher")).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if r := recv(es[1], 0, 0, 0, 1); r.Wait(ctx) != nil || string(r.Data()) != "to a parked dispatcher" {
		t.Fatalf("received %q, %v", r.Data(), r.Err())
	}
	if st := es[1].Stats()[0]; st.DispatcherBatches == 0 {
		t.Fatalf("no batch received by the dispatcher (stats %+v)", st)
	}
	// A waiting thread takes the port from the parked dispatcher.
	waitParked(t, es[1])
	before := es[1].Stats()[0]
	r := recv(es[1], 0, 0, 0, 2)
	waited := make(chan error, 1)
	go func() { waited <- r.Wait(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	// The thread holds the token and the dispatcher left the fabric (it
	// parks no more while a thread holds the token).
	pr := &es[1].ports[0].prog
	for pr.state.Load() != tokThread || pr.parked.Load() || pr.leads.Load() == before.Leads {
		if time.Now().After(deadline) {
			t.Fatal("the waiting thread never drove the port")
		}
		time.Sleep(100 * time.Microsecond)
	}
	if err := send(t, es[0], 0, 1, 0, 2, []byte("to the thread")).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil || string(r.Data()) != "to the thread" {
		t.Fatalf("received %q, %v", r.Data(), err)
	}
	after := es[1].Stats()[0]
	if after.ThreadBatches == before.ThreadBatches {
		t.Fatalf("the message did not reach the waiting thread itself: thread batches %d -> %d, dispatcher batches %d -> %d",
			before.ThreadBatches, after.ThreadBatches, before.DispatcherBatches, after.DispatcherBatches)
	}
}

// Threads that wait while another drives the port count as its waiters
// with no timer of their own (a timer per wait, set and stopped, was a
// cost of every wait at 1,000 threads): they are served and none of their
// requests has a timer.
func TestWaitersSetNoTimer(t *testing.T) {
	es := udpEngines(t, 2, Blocking)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lead := recv(es[1], 1, 0, 1, 4)
	leadDone := make(chan error, 1)
	go func() { leadDone <- lead.Wait(ctx) }()
	waitLead(t, es[1])
	const n = 100
	reqs := make([]*Request, n)
	errs := make(chan error, n)
	for i := range reqs {
		reqs[i] = recv(es[1], ThreadID(10+i), 0, ThreadID(10+i), 4)
		go func() { errs <- reqs[i].Wait(ctx) }()
	}
	pr := &es[1].ports[0].prog
	for deadline := time.Now().Add(5 * time.Second); pr.waiters.Load() < n && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond) // all waiting (or long enough)
	}
	for i := range reqs {
		send(t, es[0], ThreadID(10+i), 1, ThreadID(10+i), 4, []byte{byte(i)})
	}
	send(t, es[0], 1, 1, 1, 4, []byte{1})
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-leadDone; err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if r.timer != nil {
			t.Fatalf("waiter %d set a timer", i)
		}
		if r.Data()[0] != byte(i) {
			t.Fatalf("waiter %d got message %d", i, r.Data()[0])
		}
	}
}

// A wait counts as one of the port's waiters until two periods of
// driveIdle have begun since, and leaving after that leaves the count of
// the waits begun since alone.
func TestWaiterCountForgetsLongWaits(t *testing.T) {
	var w waiterCount
	a := w.join()
	b := w.join()
	if n := w.Load(); n != 2 {
		t.Fatalf("%d waiters counted of 2", n)
	}
	w.leave(b)
	if n := w.Load(); n != 1 {
		t.Fatalf("%d waiters counted of 1", n)
	}
	for i := 0; waitPeriod() < a+2 && i < 1000; i++ {
		time.Sleep(driveIdle / 4)
	}
	if n := w.Load(); n != 0 {
		t.Fatalf("a wait begun two periods ago still counted (%d)", n)
	}
	c := w.join()
	w.join()
	w.leave(a) // long over: not one of the new waits
	if n := w.Load(); n != 2 {
		t.Fatalf("%d waiters counted of 2 after a long wait ended", n)
	}
	w.leave(c)
	if n := w.Load(); n != 1 {
		t.Fatalf("%d waiters counted of 1", n)
	}
}
