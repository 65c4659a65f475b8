package faulty

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
)

// pair returns a wrapped sender port and a plain receiver port on one mem
// network that holds n datagrams per mailbox.
func pair(t testing.TB, f Faults, queue int) (*Port, *mem.Port) {
	t.Helper()
	nw := mem.NewNetwork()
	nw.Queue = queue
	a, err := nw.Listen("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := nw.Listen("b")
	if err != nil {
		t.Fatal(err)
	}
	fa := Wrap(a, f)
	t.Cleanup(func() { fa.Close(); b.Close() })
	return fa, b
}

// Datagrams carry their sequence number twice: in Head, and inverted in
// Body, so a single flipped bit anywhere is detected.
const dgSize = 16

func makeDatagram(seq uint64, to fabric.Endpoint) fabric.Datagram {
	b := make([]byte, dgSize)
	binary.LittleEndian.PutUint64(b[:8], seq)
	binary.LittleEndian.PutUint64(b[8:], ^seq)
	return fabric.Datagram{Head: b[:8], Body: b[8:], To: to}
}

// parse returns the sequence number and whether the datagram is intact.
func parse(b []byte) (uint64, bool) {
	if len(b) != dgSize {
		return 0, false
	}
	s := binary.LittleEndian.Uint64(b[:8])
	return s, binary.LittleEndian.Uint64(b[8:]) == ^s
}

// sendSeq sends sequence numbers from..to-1 in batches of batch.
func sendSeq(t testing.TB, p fabric.Port, to fabric.Endpoint, from, until uint64, batch int) {
	t.Helper()
	dgs := make([]fabric.Datagram, 0, batch)
	flush := func() {
		n, err := p.Send(dgs)
		if err != nil || n != len(dgs) {
			t.Fatalf("Send: %d of %d: %v", n, len(dgs), err)
		}
		dgs = dgs[:0]
	}
	for s := from; s < until; s++ {
		dgs = append(dgs, makeDatagram(s, to))
		if len(dgs) == batch {
			flush()
		}
	}
	if len(dgs) > 0 {
		flush()
	}
}

// drain returns copies of everything waiting at p.
func drain(t testing.TB, p fabric.Port) [][]byte {
	t.Helper()
	var got [][]byte
	msgs := make([][]byte, 64)
	for {
		n, err := p.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return got
		}
		for _, m := range msgs[:n] {
			got = append(got, append([]byte(nil), m...))
		}
	}
}

// collect polls p until want datagrams have arrived or the deadline passes.
func collect(t testing.TB, p fabric.Port, want int, within time.Duration) [][]byte {
	t.Helper()
	deadline := time.Now().Add(within)
	var got [][]byte
	for len(got) < want && time.Now().Before(deadline) {
		d := drain(t, p)
		if len(d) == 0 {
			time.Sleep(time.Millisecond)
		}
		got = append(got, d...)
	}
	return got
}

// within fails unless got is within 5 standard deviations of n*p.
func within(t *testing.T, name string, got uint64, n int, p float64) {
	t.Helper()
	mean := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	if d := float64(got) - mean; d > 5*sd+1 || d < -5*sd-1 {
		t.Errorf("%s = %d, want %.0f ± %.0f (n=%d, p=%v)", name, got, mean, 5*sd, n, p)
	}
}
