package stats

import (
	"errors"
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = float64(200 - i) // 200..1, unsorted
	}
	s, err := Summarize(xs)
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 200 || s.Median != 100.5 || s.P99 != 198 || s.Min != 1 || s.Max != 200 {
		t.Errorf("Summarize = %+v", s)
	}
	if xs[0] != 200 {
		t.Error("Summarize reordered its input")
	}
	one, _ := Summarize([]float64{7})
	if one.Median != 7 || one.P99 != 7 {
		t.Errorf("single sample: %+v", one)
	}
	if _, err := Summarize(nil); !errors.Is(err, ErrNoData) {
		t.Errorf("empty: %v", err)
	}
}

func TestFitHockney(t *testing.T) {
	// T = 5 µs + m / 1000 MB/s.
	sizes := []int{1, 1024, 65536, 1 << 20}
	us := make([]float64, len(sizes))
	for i, m := range sizes {
		us[i] = 5 + float64(m)/1000
	}
	h, err := FitHockney(sizes, us)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(h.A-5) > 1e-6 || math.Abs(h.B-1000) > 1e-6 || math.Abs(h.NHalf-5000) > 1e-3 {
		t.Errorf("fit = %+v", h)
	}
	flat, err := FitHockney([]int{1, 2}, []float64{3, 3})
	if err != nil || !math.IsInf(flat.B, 1) || math.Abs(flat.A-3) > 1e-12 {
		t.Errorf("flat fit = %+v, %v", flat, err)
	}
	if _, err := FitHockney([]int{8}, []float64{1}); !errors.Is(err, ErrNoData) {
		t.Errorf("one point: %v", err)
	}
	if _, err := FitHockney([]int{8, 8}, []float64{1, 2}); !errors.Is(err, ErrNoData) {
		t.Errorf("same size twice: %v", err)
	}
}
