package rdma

import (
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// TestPollYields: an idle poller gives the CPU up after a short spin, and
// still finds the datagram that comes.
func TestPollYields(t *testing.T) {
	a := listenOrSkip(t, Config{})
	b := listenOrSkip(t, Config{})
	msgs := make([][]byte, a.BatchSize())
	// 20 ms and 1000 polls at least: a loaded host may not run this
	// goroutine for all of the 20 ms.
	polls := 0
	for end := time.Now().Add(20 * time.Millisecond); polls < 1000 || time.Now().Before(end); polls++ {
		if n, err := a.Poll(msgs); n != 0 || err != nil {
			t.Fatalf("poll of an idle port: %d %v", n, err)
		}
	}
	if st := a.Stats(); st.Yields == 0 {
		t.Fatalf("%d empty polls over 20 ms never yielded: %+v", polls, st)
	}
	if _, err := b.Send([]fabric.Datagram{{Body: []byte("x"), To: a.LocalEndpoint()}}); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); ; {
		n, err := a.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 && string(msgs[0]) == "x" {
			break
		}
		if time.Now().After(end) {
			t.Fatal("datagram not polled in 10s")
		}
	}
}

// BenchmarkPollEmpty is the cost of a Poll of an idle port: how often a
// polling thread looks at the receive ring, to set beside a round trip and
// BenchmarkCQPollEmpty in internal/verbs (measured in the same boot).
// spin: each Poll as within the first pollSpin of a wait, with no yield;
// idle: yields included (one per pollYieldGap at most, after pollSpin).
func BenchmarkPollEmpty(b *testing.B) {
	a := listenOrSkip(b, Config{})
	msgs := make([][]byte, a.BatchSize())
	for _, idle := range []bool{false, true} {
		name := "spin"
		if idle {
			name = "idle"
		}
		b.Run(name, func(b *testing.B) {
			y0 := a.Stats().Yields
			for b.Loop() {
				if !idle {
					a.idleSince.Store(0) // a run of empty polls begins
				}
				if n, err := a.Poll(msgs); n != 0 || err != nil {
					b.Fatalf("poll of an idle port: %d %v", n, err)
				}
			}
			b.ReportMetric(float64(a.Stats().Yields-y0)/float64(b.N), "yields/op")
		})
	}
}

// TestPollSeesWhatWaits: a Poll that finds the port quiet takes no lock
// (quiet), so what it does not look at must make it take the full path:
// a completion in the receive ring is delivered by the next Poll, so is a
// datagram another caller moved from the ring to the ready queue (a Send
// waiting for credit, pumpRecv), and the buffers a Poll handed out go
// back to the pool at the next one.
func TestPollSeesWhatWaits(t *testing.T) {
	a := listenOrSkip(t, Config{})
	b := listenOrSkip(t, Config{})
	msgs := make([][]byte, a.BatchSize())
	free := func() int {
		a.rxMu.Lock()
		defer a.rxUnlock()
		return len(a.recv.free)
	}
	send := func(s string) {
		t.Helper()
		if _, err := b.Send([]fabric.Datagram{{Body: []byte(s), To: a.LocalEndpoint()}}); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(10 * time.Second); a.recvCQ.Empty(); {
			if time.Now().After(end) {
				t.Fatalf("%q not in the receive ring after 10s", s)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	onePoll := func(want string) {
		t.Helper()
		n, err := a.Poll(msgs)
		if err != nil || n != 1 || string(msgs[0]) != want {
			t.Fatalf("the Poll after %q arrived: %d datagrams, %v (stats %+v)", want, n, err, a.Stats())
		}
	}
	// The first datagram connects the ports; the receives it posts take
	// buffers from a's pool.
	send("x")
	onePoll("x")
	a.Handled()
	free0 := free() // none lent
	for range 100 {
		if n, err := a.Poll(msgs); n != 0 || err != nil {
			t.Fatalf("poll of an idle port: %d %v", n, err)
		}
	}
	if !a.quiet() {
		t.Fatalf("an idle port is not quiet: rxPending %v, ring empty %v", a.rxPending.Load(), a.recvCQ.Empty())
	}

	// In the ring.
	send("y")
	onePoll("y")
	// Handed out, then back at the next Poll.
	if n, err := a.Poll(msgs); n != 0 || err != nil {
		t.Fatalf("poll of an idle port: %d %v", n, err)
	}
	if f := free(); f != free0 {
		t.Fatalf("%d buffers free after the Poll that followed a delivery, %d before it", f, free0)
	}

	// Reaped by another caller: ready, with the ring empty.
	send("z")
	a.pumpRecv()
	if !a.recvCQ.Empty() {
		t.Fatal("the receive ring not empty after pumpRecv")
	}
	onePoll("z")
}
