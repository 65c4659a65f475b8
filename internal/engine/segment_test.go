package engine

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/internal/wire"
)

// A message is cut into the fewest fragments the limit allows, all of
// about one size: none is a tiny tail.
func TestFragSizeFor(t *testing.T) {
	for _, limit := range []int{minFragSize, 1000, 1400, 8896 - wire.HeaderSize, fabric.MaxDatagramSize - wire.HeaderSize} {
		totals := []uint64{0, 1, uint64(limit) - 1, uint64(limit), uint64(limit) + 1, 2*uint64(limit) - 1, 2 * uint64(limit),
			2*uint64(limit) + 1, 64 << 10, 64<<10 + 1, 2 << 20, 1<<30 + 7}
		for _, total := range totals {
			fs := fragSizeFor(total, limit)
			if total <= uint64(limit) {
				if fs != uint32(limit) {
					t.Errorf("limit %d, total %d: fragment size %d, want the limit", limit, total, fs)
				}
				continue
			}
			n := wire.FragCount(total, fs)
			fewest := (total + uint64(limit) - 1) / uint64(limit)
			last := wire.FragLen(total, fs, uint32(n-1))
			switch {
			case fs > uint32(limit):
				t.Errorf("limit %d, total %d: fragment size %d over the limit", limit, total, fs)
			case n != fewest:
				t.Errorf("limit %d, total %d: %d fragments, want %d", limit, total, n, fewest)
			case last+n < uint64(fs):
				t.Errorf("limit %d, total %d: last fragment %d bytes of %d", limit, total, last, fs)
			}
		}
	}
}

// sizeRecorder is a fabric port that records the length of every data
// datagram it sends.
type sizeRecorder struct {
	fabric.Port
	mu    sync.Mutex
	sizes []int
}

func (s *sizeRecorder) Send(dgs []fabric.Datagram) (int, error) {
	s.mu.Lock()
	for _, d := range dgs {
		if len(d.Head) > 3 && wire.Kind(d.Head[3]) == wire.Data {
			s.sizes = append(s.sizes, d.Len())
		}
	}
	s.mu.Unlock()
	return s.Port.Send(dgs)
}

// A message a little over one datagram goes as two datagrams of the same
// size, not a full one and a tiny tail.
func TestEvenFragments(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	rec := &sizeRecorder{Port: a}
	e0, e1 := pair(t, rec, b, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	limit := a.MaxDatagram(nil) - wire.HeaderSize
	for _, size := range []int{limit + 1, 64 << 10, 5*limit + 3} {
		rec.mu.Lock()
		rec.sizes = rec.sizes[:0]
		rec.mu.Unlock()
		data := pattern(size, uint64(size))
		s := e0.newSend(0, 1, 0, 1, data)
		e0.post(s)
		r := e1.newRecv(0, 0, 0, 1, nil)
		e1.post(r)
		if err := r.Wait(ctx); err != nil || !bytes.Equal(r.Data(), data) {
			t.Fatalf("%d bytes: %v, equal %v", size, err, bytes.Equal(r.Data(), data))
		}
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		sizes := append([]int(nil), rec.sizes...)
		rec.mu.Unlock()
		want := (size + limit - 1) / limit
		if len(sizes) < want {
			t.Fatalf("%d bytes: %d data datagrams, want at least %d", size, len(sizes), want)
		}
		lo, hi := sizes[0], sizes[0]
		for _, l := range sizes {
			lo, hi = min(lo, l), max(hi, l)
		}
		if hi-lo > want {
			t.Errorf("%d bytes: data datagrams of %d to %d bytes (%v)", size, lo, hi, sizes)
		}
	}
}
