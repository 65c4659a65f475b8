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
// idle: yields included (every 16th Poll after pollSpin).
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
					a.idleSince = time.Time{} // a run of empty polls begins
				}
				if n, err := a.Poll(msgs); n != 0 || err != nil {
					b.Fatalf("poll of an idle port: %d %v", n, err)
				}
			}
			b.ReportMetric(float64(a.Stats().Yields-y0)/float64(b.N), "yields/op")
		})
	}
}
