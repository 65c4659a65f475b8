// Package stats summarises repeated benchmark samples (median and
// 99th percentile) and fits the Hockney model T(m) = a + m/b to message
// times.
package stats

import (
	"errors"
	"math"
	"slices"

	"github.com/pcor-go/pcor/perfmodel"
)

// ErrNoData is returned when there are too few points to summarise or fit.
var ErrNoData = errors.New("stats: not enough data")

// Summary describes a set of samples.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P99    float64 `json:"p99"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize sorts a copy of xs and returns its summary. Percentiles use the
// nearest-rank method, so with few samples P99 is the largest.
func Summarize(xs []float64) (Summary, error) {
	if len(xs) == 0 {
		return Summary{}, ErrNoData
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Summary{
		N:      len(s),
		Median: median(s),
		P99:    Percentile(s, 99),
		Min:    s[0],
		Max:    s[len(s)-1],
	}, nil
}

func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Percentile returns the nearest-rank p-th percentile of sorted samples.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// Hockney is the fit of T(m) = A + m/B to one-way message times.
type Hockney struct {
	// A is the latency in microseconds (the time of a zero-byte message).
	A float64 `json:"latency_us"`
	// B is the asymptotic bandwidth in MB/s (10^6 bytes per second), +Inf
	// when time does not grow with size.
	B float64 `json:"bandwidth_mbs"`
	// NHalf = A*B is the message size in bytes that reaches half of B.
	NHalf float64 `json:"n_half_bytes"`
}

// FitHockney fits T(m) = a + m/b by least squares to sizes in bytes and
// one-way times in microseconds (perfmodel's linear fit).
func FitHockney(sizes []int, us []float64) (Hockney, error) {
	if len(sizes) != len(us) || len(sizes) < 2 {
		return Hockney{}, ErrNoData
	}
	obs := make([]perfmodel.Observation, len(sizes))
	for i, m := range sizes {
		obs[i] = perfmodel.Observation{N: float64(m), T: us[i]}
	}
	fit, err := perfmodel.Fit(perfmodel.Linear(), obs, perfmodel.Absolute)
	if err != nil {
		return Hockney{}, ErrNoData
	}
	a, slope := fit.Coef[0], fit.Coef[1] // µs, µs per byte
	h := Hockney{A: a, B: math.Inf(1), NHalf: math.Inf(1)}
	if slope > 1e-12*math.Abs(a) && slope > 0 {
		h.B = 1 / slope // bytes per µs = MB/s
		h.NHalf = a * h.B
	}
	return h, nil
}
