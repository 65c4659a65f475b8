package faulty

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/udp"
)

func udpPair(t *testing.T, f Faults) (*Port, *udp.Port) {
	t.Helper()
	a, err := udp.Listen("127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := udp.Listen("127.0.0.1:0", udp.Config{})
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	fa := Wrap(a, f)
	t.Cleanup(func() { fa.Close(); b.Close() })
	return fa, b
}

// receiveUDP receives until want datagrams arrived or nothing more comes
// for a while, and returns copies.
func receiveUDP(t *testing.T, p *udp.Port, want int) [][]byte {
	t.Helper()
	var got [][]byte
	msgs := make([][]byte, p.BatchSize())
	for len(got) < want {
		p.SetReceiveDeadline(time.Now().Add(2 * time.Second))
		n, err := p.Receive(msgs)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			got = append(got, append([]byte(nil), m...))
		}
	}
	return got
}

func TestOverUDP(t *testing.T) {
	const n = 600
	f := Faults{Seed: 21, Loss: 0.2, Duplicate: 0.1, Reorder: 0.1, ReorderAfter: 2, ReorderDelay: 50 * time.Millisecond}
	a, b := udpPair(t, f)
	if a.Kind() != "udp" {
		t.Fatalf("Kind() = %q, want the wrapped port's", a.Kind())
	}
	to, err := a.ParseEndpoint(b.LocalEndpoint().String())
	if err != nil {
		t.Fatal(err)
	}
	sendSeq(t, a, to, 0, n, 16)
	st := a.Stats()
	want := n - int(st.Dropped) + int(st.Duplicated)
	got := receiveUDP(t, b, want)
	if len(got) != want {
		t.Fatalf("received %d datagrams, want %d (stats %+v)", len(got), want, a.Stats())
	}
	distinct := map[uint64]bool{}
	inversions := 0
	var last uint64
	for i, m := range got {
		s, ok := parse(m)
		if !ok {
			t.Fatal("damaged datagram without corruption")
		}
		distinct[s] = true
		if i > 0 && s < last {
			inversions++
		}
		last = s
	}
	if len(distinct) != n-int(st.Dropped) {
		t.Fatalf("%d distinct datagrams, want %d", len(distinct), n-int(st.Dropped))
	}
	if inversions == 0 {
		t.Fatal("no datagram arrived out of order")
	}
}

func TestPartitionOverUDP(t *testing.T) {
	a, b := udpPair(t, Faults{Seed: 1})
	to, err := a.ParseEndpoint(b.LocalEndpoint().String())
	if err != nil {
		t.Fatal(err)
	}
	a.SetPartitioned(true)
	sendSeq(t, a, to, 0, 20, 8)
	a.SetPartitioned(false)
	sendSeq(t, a, to, 1000, 1001, 1)
	// Loopback keeps one socket's datagrams in order: had any crossed
	// the partition, it would arrive before the marker.
	got := receiveUDP(t, b, 1)
	if len(got) != 1 {
		t.Fatalf("received %d datagrams, want the marker", len(got))
	}
	if s, _ := parse(got[0]); s != 1000 {
		t.Fatalf("first datagram is seq %d, want the marker 1000", s)
	}
	if st := a.Stats(); st.CutOut != 20 {
		t.Fatalf("CutOut = %d, want 20", st.CutOut)
	}
}
