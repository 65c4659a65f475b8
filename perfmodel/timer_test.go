package perfmodel

import (
	"sync"
	"testing"
	"time"
)

func TestRecorder(t *testing.T) {
	var r Recorder
	r.MaxSamples = 4
	g := r.Region("loop")
	if r.Region("loop") != g {
		t.Fatal("a second Region call made a new region")
	}
	for i := range 6 {
		st := g.Start()
		g.Stop(st, float64(i), 2)
	}
	s := g.Samples()
	if len(s) != 4 || s[0].N != 2 || s[3].N != 5 || s[0].P != 2 || g.Total() != 6 {
		t.Fatalf("samples %+v, total %d", s, g.Total())
	}
	for _, x := range s {
		if x.T < 0 || x.T > 1 {
			t.Fatalf("duration %v", x.T)
		}
	}
	g.Add(Sample{N: 9, T: 1})
	if s := g.Samples(); s[3].N != 9 || s[0].N != 3 {
		t.Fatalf("after Add: %+v", s)
	}
	r.Region("comm")
	if n := r.Names(); len(n) != 2 || n[0] != "comm" {
		t.Fatalf("names %v", n)
	}
	g.Reset()
	if len(g.Samples()) != 0 {
		t.Fatal("Reset kept samples")
	}

	// Concurrent timing loses nothing.
	var wg sync.WaitGroup
	var big Recorder
	h := big.Region("par")
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				h.Stop(h.Start(), 1, 1)
			}
		}()
	}
	wg.Wait()
	if h.Total() != 800 || len(h.Samples()) != 800 {
		t.Fatalf("total %d, kept %d", h.Total(), len(h.Samples()))
	}
}

// BenchmarkRegion is the cost of timing one region execution (Start and
// Stop around an empty body), once the region's samples are at their bound.
func BenchmarkRegion(b *testing.B) {
	var r Recorder
	r.MaxSamples = 1024
	g := r.Region("x")
	b.ReportAllocs()
	for b.Loop() {
		g.Stop(g.Start(), 1, 1)
	}
}

// BenchmarkClock is the floor: the two clock reads alone.
func BenchmarkClock(b *testing.B) {
	var d time.Duration
	for b.Loop() {
		d += time.Since(time.Now())
	}
	_ = d
}
