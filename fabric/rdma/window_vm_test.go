package rdma

import (
	"fmt"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// TestSendWindowLands: a sender's whole send window (SendDepth datagrams
// sent at once) lands in the receive buffers posted for it while the
// receiving process takes none of them: the default RecvPerPeer covers
// SendDepth, so no send meets receiver-not-ready, whose retries would
// wait until the receiver reposted. Then every datagram is received, in
// order.
func TestSendWindowLands(t *testing.T) {
	a := listenOrSkip(t, Config{})
	b := listenOrSkip(t, Config{})
	if a.cfg.RecvPerPeer < b.cfg.SendDepth {
		t.Fatalf("RecvPerPeer %d < SendDepth %d", a.cfg.RecvPerPeer, b.cfg.SendDepth)
	}
	to, err := b.ParseEndpoint(a.LocalEndpoint().String())
	if err != nil {
		t.Fatal(err)
	}
	n := b.cfg.SendDepth
	dgs := make([]fabric.Datagram, n)
	for i := range dgs {
		dgs[i] = fabric.Datagram{Body: []byte(fmt.Sprintf("w%03d", i)), To: to}
	}
	if k, err := b.Send(dgs); k != n || err != nil {
		t.Fatalf("Send: %d of %d, %v", k, n, err)
	}
	// Bounded generously for a loaded host; without a posted buffer for
	// each, the sends would wait for a receive that does not come.
	for end := time.Now().Add(30 * time.Second); ; {
		done, err := b.Taken(to)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d sends not all completed in 30 s while the receiver took nothing: %+v", n, b.Stats())
		}
		b.WaitTaken(to, 100*time.Millisecond)
	}
	msgs := make([][]byte, a.BatchSize())
	got := 0
	for end := time.Now().Add(30 * time.Second); got < n; {
		k, err := a.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:k] {
			if want := fmt.Sprintf("w%03d", got); string(m) != want {
				t.Fatalf("datagram %d: %q, want %q", got, m, want)
			}
			got++
		}
		if time.Now().After(end) {
			t.Fatalf("%d of %d datagrams received in 30 s", got, n)
		}
	}
}
