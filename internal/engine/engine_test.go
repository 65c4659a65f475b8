package engine

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
)

// pair builds two engines (procs 0 and 1) joined by the given ports.
func pair(t testing.TB, a, b fabric.Port, cfg Config) (*Engine, *Engine) {
	t.Helper()
	cfg.JobKey = 0xfeed
	c0, c1 := cfg, cfg
	c0.Proc, c1.Proc = 0, 1
	e0, err := New(c0)
	if err != nil {
		t.Fatal(err)
	}
	e1, err := New(c1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e0.AddPort(a, Blocking); err != nil {
		t.Fatal(err)
	}
	if _, err := e1.AddPort(b, Blocking); err != nil {
		t.Fatal(err)
	}
	if err := e0.SetPeer(1, 0, b.LocalEndpoint().String()); err != nil {
		t.Fatal(err)
	}
	if err := e1.SetPeer(0, 0, a.LocalEndpoint().String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e0.Close(); e1.Close() })
	return e0, e1
}

func memPair(t testing.TB, cfg Config) (*Engine, *Engine) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	return pair(t, a, b, cfg)
}

// sendPattern sends n bytes of pattern from thread 3 of src to thread 4
// of dst (tag 9), posting the send before its receive, and checks that
// they arrive whole.
func sendPattern(ctx context.Context, t *testing.T, src, dst *Engine, n int) {
	t.Helper()
	data := pattern(n, uint64(n))
	s := src.newSend(3, dst.Proc(), 4, 9, data)
	src.post(s)
	r := dst.newRecv(4, src.Proc(), 3, 9, nil)
	dst.post(r)
	if err := r.Wait(ctx); err != nil {
		t.Fatalf("%d: recv: %v", n, err)
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("%d: send: %v", n, err)
	}
	if !bytes.Equal(r.Data(), data) {
		t.Fatalf("%d: data differs", n)
	}
}

func pattern(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestSizesOverMem(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range []int{0, 1, 65535, 65536, 65537, 2095872, 2095873, 8 << 20} {
		sendPattern(ctx, t, e0, e1, n)
	}
	t.Logf("fragments sent %d, acks %d", e0.Stats()[0].FragsSent, e1.Stats()[0].AcksSent)
}
