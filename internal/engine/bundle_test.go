package engine

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/faulty"
	"github.com/pcor-go/pcor/fabric/mem"
)

// Small messages queued together leave in bundles and arrive each in its
// place: in order per pair of threads and tag, intact, once, over a clean
// network and over one that loses, duplicates, reorders and corrupts
// datagrams (a bundle lost is sent again message by message).
func TestBundles(t *testing.T) {
	for _, c := range []struct {
		name   string
		faults faulty.Faults
	}{
		{"clean", faulty.Faults{}},
		{"lossy", faulty.Faults{Seed: 5, Loss: 0.1, Duplicate: 0.05, Reorder: 0.1, Corrupt: 0.05}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := mem.NewNetwork()
			a, _ := n.Listen("a")
			b, _ := n.Listen("b")
			var pa, pb fabric.Port = a, b
			if c.faults != (faulty.Faults{}) {
				pa = faulty.Wrap(a, c.faults)
				f := c.faults
				f.Seed++
				pb = faulty.Wrap(b, f)
			}
			e0, e1 := pair(t, pa, pb, Config{MinRTO: time.Millisecond})
			bundleTraffic(t, e0, e1)
			s := e0.Stats()[0]
			t.Logf("%d datagrams sent for %d messages: %d bundles of %d messages, %d retransmissions",
				s.FragsSent, bundledMsgs, s.BundlesSent, s.MessagesBundled, s.Retransmits)
			if s.BundlesSent == 0 || s.MessagesBundled < 2*s.BundlesSent {
				t.Fatalf("%d bundles sent carrying %d messages", s.BundlesSent, s.MessagesBundled)
			}
			if c.faults == (faulty.Faults{}) && s.FragsSent > bundledMsgs/2 {
				// A message of a bundle taken for another (a duplicate) is
				// sent again alone: it arrives, but late.
				t.Fatalf("%d datagrams sent for %d messages over a clean network", s.FragsSent, bundledMsgs)
			}
		})
	}
}

const (
	bundlePairs  = 4
	bundlePer    = 600
	bundledMsgs  = bundlePairs * bundlePer
	bundleWindow = 64
)

// bundleMsg is message i of pair p: its number, then a pattern, sizes
// from empty to past bundleMax.
func bundleMsg(p, i int) []byte {
	n := (i * 37) % (bundleMax + 200)
	if i%50 == 0 {
		n = 0
	}
	return append([]byte(fmt.Sprint(p, ":", i, ":")), pattern(n, uint64(p*bundlePer+i))...)
}

// bundleTraffic sends bundlePer messages from each of bundlePairs threads
// of e0 to a thread of e1, keeping bundleWindow sends in flight, and
// checks that each receiver takes them in order, then that none came twice.
func bundleTraffic(t *testing.T, e0, e1 *Engine) {
	t.Helper()
	// A guard against a hang, not a timing.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2*bundlePairs)
	for p := range bundlePairs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			ep := e0.Endpoint(ThreadID(p))
			var win []*Request
			for i := range bundlePer {
				if len(win) == bundleWindow {
					if err := win[0].Wait(ctx); err != nil {
						errs <- err
						return
					}
					win = win[1:]
				}
				win = append(win, ep.Isend(1, ThreadID(10+p), Tag(p%2), bundleMsg(p, i)))
			}
			for _, r := range win {
				if err := r.Wait(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			ep := e1.Endpoint(ThreadID(10 + p))
			for i := range bundlePer {
				r, err := ep.Recv(ctx, 0, ThreadID(p), Tag(p%2), nil)
				if err != nil {
					errs <- fmt.Errorf("pair %d message %d: %w", p, i, err)
					return
				}
				if want := bundleMsg(p, i); !bytes.Equal(r.Data(), want) {
					errs <- fmt.Errorf("pair %d message %d: got %.20q (%d bytes), want %.20q (%d bytes)", p, i, r.Data(), len(r.Data()), want, len(want))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a duplicate delivered late would show
	for p := range bundlePairs {
		if st, ok := e1.Endpoint(ThreadID(10+p)).Iprobe(AnyProc, AnyThread, AnyTag); ok {
			t.Fatalf("pair %d: a message more than was sent: %+v", p, st)
		}
	}
	if got := e1.Stats()[0].MessagesRecv; got != bundledMsgs {
		t.Fatalf("%d messages received, %d sent", got, bundledMsgs)
	}
}

// The messages of a bundle, in order and each answering a receive posted
// before it came, take the short path (wholeLocked): each is copied into
// its receive's buffer with no control block taken for it.
func TestBundleShortPath(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	e0, e1 := pair(t, a, b, Config{})
	// A guard against a hang, not a timing.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const k = 48
	rx := e1.Endpoint(10)
	recvs := make([]*Request, k)
	for i := range recvs {
		recvs[i] = rx.Irecv(0, 1, 3, make([]byte, 64))
	}
	tx := e0.Endpoint(1)
	sends := make([]*Request, k)
	for i := range sends {
		sends[i] = tx.Isend(1, 10, 3, []byte(fmt.Sprint("message ", i)))
	}
	for i, r := range sends {
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	for i, r := range recvs {
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		if got, want := string(r.Data()), fmt.Sprint("message ", i); got != want {
			t.Fatalf("receive %d: %q, want %q", i, got, want)
		}
	}
	s := e0.Stats()[0]
	if s.BundlesSent == 0 || s.MessagesBundled < 2*s.BundlesSent {
		t.Fatalf("%d bundles sent carrying %d messages: the test needs bundles", s.BundlesSent, s.MessagesBundled)
	}
	e1.pool.mu.Lock()
	gets := e1.pool.gets
	e1.pool.mu.Unlock()
	if gets != 0 {
		t.Fatalf("%d control blocks taken for %d messages (%d of them in %d bundles) into posted receives, want none",
			gets, k, s.MessagesBundled, s.BundlesSent)
	}
}
