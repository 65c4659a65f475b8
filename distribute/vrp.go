package distribute

import (
	"math"

	"github.com/pcor-go/pcor/perfmodel"
)

// vrpOf is the VRP of per-worker models of the time of n units.
func vrpOf(models []*perfmodel.Model, n int) []float64 {
	return perfmodel.VRP(models, float64(n), 0)
}

// Phases is the number of phases VRP-SS should hand total units out in,
// from per-worker models of the time of a range, T_i(m) = a_i + b_i·m
// (the round trip included, as Calibrate fits them), at least 1 and at
// most most. Each phase costs every worker a round trip, a = max a_i; the
// work ends uneven by up to one phase's range, B/k with B = total/Σ(1/b_i)
// the time of a split in proportion to the speeds, half that on average.
// The k minimizing k·a + B/(2k) is √(B/(2a)). A small problem with costly
// round trips goes out in one phase, a static VRP split: the seed's
// finding that VRP-SS pays for its messages where the work is small.
// Models without a positive intercept or slope give most.
func Phases(models []*perfmodel.Model, total, most int) int {
	most = max(most, 1)
	if total <= 0 || len(models) == 0 {
		return most
	}
	var a, speed float64
	for _, m := range models {
		a0 := m.Predict(0, 0).T
		b := (m.Predict(float64(total), 0).T - a0) / float64(total)
		if !(b > 0) || math.IsInf(b, 1) {
			return most
		}
		speed += 1 / b
		a = math.Max(a, a0)
	}
	if !(a > 0) {
		return most
	}
	k := math.Round(math.Sqrt(float64(total) / speed / (2 * a)))
	return int(math.Max(1, math.Min(k, float64(most))))
}
