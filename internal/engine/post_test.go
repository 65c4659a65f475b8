package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/faulty"
	"github.com/pcor-go/pcor/fabric/mem"
)

// Posted messages arrive in order and intact although the sender reuses
// its buffer at once and the network loses, duplicates and reorders
// datagrams; every posted request goes back to the pool.
func TestPostOverLossyNetwork(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	fa := faulty.Wrap(a, faulty.Faults{Seed: 11, Loss: 0.1, Duplicate: 0.05, Reorder: 0.1})
	e0, e1 := pair(t, fa, b, Config{MinRTO: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const msgs = 500
	buf := make([]byte, 0, EagerLimit)
	go func() {
		for i := 0; i < msgs; i++ {
			buf = append(buf[:0], fmt.Sprint(i)...)
			buf = append(buf, pattern(i*31%EagerLimit, uint64(i))...)
			if err := e0.Post(1, 1, 2, 7, buf); err != nil {
				t.Error(err)
				return
			}
			clear(buf) // reused at once
		}
	}()
	for i := 0; i < msgs; i++ {
		r := recv(e1, 2, 0, 1, 7)
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		want := append([]byte(fmt.Sprint(i)), pattern(i*31%EagerLimit, uint64(i))...)
		if !bytes.Equal(r.Data(), want) {
			t.Fatalf("message %d differs", i)
		}
	}
	// Every posted message is acknowledged in the end.
	deadline := time.Now().Add(30 * time.Second)
	for e0.Stats()[0].MessagesSent < msgs {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d posted messages acknowledged", e0.Stats()[0].MessagesSent, msgs)
		}
		time.Sleep(time.Millisecond)
	}
}

// A Post to a process that no longer answers returns at once; the failure
// is reported by a later send to it.
func TestPostLateFailure(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	e0, e1 := pair(t, a, b, Config{UnreachableTimeout: 200 * time.Millisecond})
	e1.Close()
	if err := e0.Post(0, 1, 0, 1, []byte("into the void")); err != nil {
		t.Fatalf("Post = %v, want nil (the failure comes later)", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := e0.Post(0, 1, 0, 1, []byte("again"))
		var ue *UnreachableError
		if errors.As(err, &ue) {
			break
		}
		if err != nil {
			t.Fatalf("Post = %v, want an UnreachableError", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("a dead destination was never reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := e0.Post(0, 1, 0, 1, make([]byte, EagerLimit+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Post of %d bytes = %v, want ErrTooLarge", EagerLimit+1, err)
	}
}

// A ping-pong of posted messages over UDP is driven by the waiting
// threads and allocates nothing per message.
func TestPostPingPongAllocs(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			es := udpEngines(t, 2, mode)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				ep := es[1].Endpoint(1)
				buf := make([]byte, 64)
				for {
					r, err := ep.Recv(ctx, 0, 0, 5, buf)
					if err != nil {
						return
					}
					select {
					case <-stop:
						return
					default:
					}
					ep.Post(0, 0, 6, r.Data())
				}
			}()
			ep := es[0].Endpoint(0)
			msg, buf := []byte("ping"), make([]byte, 64)
			round := func() {
				if err := ep.Post(1, 1, 5, msg); err != nil {
					t.Fatal(err)
				}
				r, err := ep.Recv(ctx, 1, 1, 6, buf)
				if err != nil || string(r.Data()) != "ping" {
					t.Fatalf("%v, %v", r, err)
				}
			}
			for i := 0; i < 200; i++ {
				round()
			}
			if raceEnabled {
				return // the race detector allocates
			}
			if a := testing.AllocsPerRun(200, round); a > 0.1 {
				t.Errorf("%.2f allocations per round trip", a)
			}
		})
	}
}

// Messages posted just before Close are still delivered over a lossy
// network: Close waits a little for their acknowledgements (retransmitting
// meanwhile) rather than failing them at once.
func TestPostThenClose(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	fa := faulty.Wrap(a, faulty.Faults{Seed: 5, Loss: 0.3})
	e0, e1 := pair(t, fa, b, Config{MinRTO: time.Millisecond})
	es := []*Engine{e0, e1}
	for i := 0; i < 10; i++ {
		if err := es[0].Post(0, 1, 0, Tag(i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	es[0].Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		r := recv(es[1], 0, 0, 0, Tag(i))
		if err := r.Wait(ctx); err != nil || len(r.Data()) != 1 || r.Data()[0] != byte(i) {
			t.Fatalf("message %d: %v, %v", i, r.Data(), err)
		}
	}
}

// Posted copies are bounded by the memory they take, not by their number:
// while no acknowledgement comes back, thousands of small messages (as
// many threads each streaming a few) are still copied, and IsendCopy
// returns a request already done; copies of the largest size stop near
// maxPostedBytes, and IsendCopy then waits for the destination as Isend.
func TestPostedBoundInBytes(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	fb := faulty.Wrap(b, faulty.Faults{Seed: 1, Loss: 1}) // no acknowledgement comes back
	e0, _ := pair(t, a, fb, Config{UnreachableTimeout: time.Minute})
	ep := e0.Endpoint(0)
	small := make([]byte, 64)
	const smalls = 8000 // more than a bound of 1,024 copies would let through
	for i := range smalls {
		if r := ep.IsendCopy(1, 1, 1, small); !r.Copied() {
			t.Fatalf("small message %d not copied (%d bytes posted)", i, e0.postedBytes.Load())
		}
	}
	big := make([]byte, EagerLimit)
	for i := 0; ; i++ {
		r := ep.IsendCopy(1, 1, 1, big)
		if !r.Copied() {
			r.Cancel()
			break
		}
		if i > maxPostedBytes/EagerLimit {
			t.Fatalf("%d copies of %d bytes posted, bound %d bytes", i+1, EagerLimit, maxPostedBytes)
		}
	}
	if got := e0.postedBytes.Load(); got > maxPostedBytes || got < maxPostedBytes-EagerLimit-postCost {
		t.Errorf("posted copies take %d bytes, want just under %d", got, maxPostedBytes)
	}
}

// localEndpoints returns an engine with no port made with cfg (closed
// when the test ends), a context of a minute, and its threads 1 and 2.
func localEndpoints(t *testing.T, cfg Config) (*Engine, context.Context, *Endpoint, *Endpoint) {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return e, ctx, e.Endpoint(1), e.Endpoint(2)
}

// A small IsendCopy to a thread of this process is copied at once (into
// the posted receive or as unexpected) and returns the shared done
// request, allocating nothing; when no control block is left it is an
// Isend that completes once a receive takes the message, in order.
func TestIsendCopyLocal(t *testing.T) {
	_, ctx, src, dst := localEndpoints(t, Config{Proc: 3, MCBs: 4})
	buf := make([]byte, 64)
	// Unexpected: four control blocks, then the sends wait.
	var waiting []*Request
	for i := range 6 {
		if i >= 4 {
			buf = make([]byte, 64) // read until the send completes
		}
		buf[0] = byte(i)
		r := src.IsendCopy(3, 2, 9, buf)
		if i < 4 && !r.Copied() {
			t.Fatalf("send %d with a control block free not copied", i)
		}
		if i >= 4 {
			if r.Copied() {
				t.Fatalf("send %d with no control block left copied", i)
			}
			waiting = append(waiting, r)
		}
	}
	got := make([]byte, 64)
	for i := range 6 {
		r, err := dst.Recv(ctx, 3, 1, 9, got)
		if err != nil || len(r.Data()) != 64 || r.Data()[0] != byte(i) {
			t.Fatalf("receive %d: %v, %v", i, r, err)
		}
	}
	for _, r := range waiting {
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Into a posted receive, and no allocation per message.
	round := func() {
		rr := dst.Irecv(3, 1, 8, got)
		buf[0]++
		if r := src.IsendCopy(3, 2, 8, buf); !r.Copied() {
			t.Fatal("send to a posted receive not copied")
		}
		if err := rr.Wait(ctx); err != nil || rr.Data()[0] != buf[0] {
			t.Fatalf("%v, %v", rr.Data()[:1], err)
		}
	}
	round()
	if raceEnabled {
		return
	}
	sendOnly := func() {
		src.IsendCopy(3, 2, 7, buf)
		if _, err := dst.Recv(ctx, 3, 1, 7, got); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		sendOnly()
	}
	if a := testing.AllocsPerRun(500, sendOnly); a > 0.1 {
		t.Errorf("%.2f allocations per local message", a)
	}
}

// A message to a thread of this process larger than MaxMessage is refused
// by Send and IsendCopy alike (TooLargeError), however small, and one
// within it is delivered; Send after Close fails with ErrClosed.
func TestLocalSendMaxMessage(t *testing.T) {
	e, ctx, src, dst := localEndpoints(t, Config{Proc: 3, MaxMessage: 100})
	big := make([]byte, 101)
	var tl *TooLargeError
	if err := src.Send(ctx, 3, 2, 9, big); !errors.As(err, &tl) {
		t.Errorf("Send of 101 bytes under MaxMessage 100: %v, want TooLargeError", err)
	}
	if err := src.IsendCopy(3, 2, 9, big).Wait(ctx); !errors.As(err, &tl) {
		t.Errorf("IsendCopy of 101 bytes under MaxMessage 100: %v, want TooLargeError", err)
	}
	if err := src.Send(ctx, 3, 2, 9, big[:100]); err != nil {
		t.Fatal(err)
	}
	r, err := dst.Recv(ctx, 3, 1, 9, nil)
	if err != nil || len(r.Data()) != 100 {
		t.Fatalf("received %v, %v; want the 100 bytes", r, err)
	}
	if _, ok := dst.Iprobe(3, 1, 9); ok {
		t.Error("a message larger than MaxMessage was delivered")
	}
	e.Close()
	if err := src.Send(ctx, 3, 2, 9, big[:1]); err != ErrClosed {
		t.Errorf("Send after Close: %v, want ErrClosed", err)
	}
}

// TestManyStreamsHeld: 1,000 threads' streams of 20 small messages each,
// all arriving before any is received, are held (20,000 control blocks,
// made as they are needed) rather than answered BUSY, and then received
// whole and in order.
func TestManyStreamsHeld(t *testing.T) {
	const threads, per = 1000, 20
	e0, e1 := memPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msg := make([]byte, 64)
	for i := range per {
		for th := range threads {
			msg[0], msg[1], msg[2] = byte(i), byte(th), byte(th>>8)
			if err := e0.Post(ThreadID(th), 1, ThreadID(th), 9, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
	arrived := func() (msgs, busy uint64) {
		for _, s := range e1.Stats() {
			msgs += s.MessagesRecv
			busy += s.BusySent
		}
		return msgs, busy
	}
	for ctx.Err() == nil {
		if msgs, busy := arrived(); busy > 0 || msgs == threads*per {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if msgs, busy := arrived(); busy > 0 || msgs != threads*per {
		t.Fatalf("%d of %d messages arrived, %d BUSY answers", msgs, threads*per, busy)
	}
	buf := make([]byte, 64)
	for th := range threads {
		ep := e1.Endpoint(ThreadID(th))
		for i := range per {
			r, err := ep.Recv(ctx, 0, ThreadID(th), 9, buf)
			if err != nil || len(r.Data()) != 64 || r.Data()[0] != byte(i) || r.Data()[1] != byte(th) || r.Data()[2] != byte(th>>8) {
				t.Fatalf("thread %d, message %d: %v %v", th, i, r, err)
			}
		}
	}
}

// The posted copies of a sender faster than its receiver take at most
// maxPostedBytes of the process's memory, requests included: while the
// receiver takes nothing, small messages are copied until the bound and
// IsendCopy then sends as Isend; once the receiver catches up every copy
// is acknowledged and given back, and the requests and buffers kept for
// reuse stay within the bound too.
func TestPostedCopiesMemoryBound(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	fa := faulty.Wrap(a, faulty.Faults{Seed: 1})
	fa.SetPartitioned(true) // the receiver takes nothing, for now
	e0, e1 := pair(t, fa, b, Config{UnreachableTimeout: time.Minute})
	ep := e0.Endpoint(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	const slack = 1 << 20 // the free lists' slices, the streams' rings
	base := heap()
	small := make([]byte, 64)
	copies := 0
	var plain *Request
	for i := 0; plain == nil; i++ {
		if i > maxPostedBytes/64 {
			t.Fatalf("%d copies posted, bound %d bytes", i, maxPostedBytes)
		}
		if r := ep.IsendCopy(1, 1, 1, small); r.Copied() {
			copies++
		} else {
			plain = r
		}
	}
	used := heap() - min(base, heap())
	t.Logf("%d copies of %d bytes: heap grew %d bytes (bound %d)", copies, len(small), used, maxPostedBytes)
	if used > maxPostedBytes+slack {
		t.Errorf("%d copies of %d bytes take %d bytes, bound %d", copies, len(small), used, maxPostedBytes)
	}

	// The receiver catches up: everything arrives, every copy is given
	// back, and what the engine keeps for reuse stays within the bound.
	fa.SetPartitioned(false)
	rx := e1.Endpoint(1)
	for i := range copies + 1 {
		if _, err := rx.Recv(ctx, 0, 0, 1, nil); err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
	}
	if err := plain.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for e0.postedBytes.Load() != 0 {
		if ctx.Err() != nil {
			t.Fatalf("%d bytes of copies never acknowledged", e0.postedBytes.Load())
		}
		time.Sleep(time.Millisecond)
	}
	kept := heap() - min(base, heap())
	t.Logf("kept for reuse: %d bytes, %d requests", kept, e0.posts.size())
	if kept > maxPostedBytes+slack {
		t.Errorf("the engine keeps %d bytes after the copies were acknowledged, bound %d", kept, maxPostedBytes)
	}
}
