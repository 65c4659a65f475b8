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
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		if n, err := a.Poll(msgs); n != 0 || err != nil {
			t.Fatalf("poll of an idle port: %d %v", n, err)
		}
	}
	if st := a.Stats(); st.Yields == 0 {
		t.Fatalf("20 ms of empty polls never yielded: %+v", st)
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
