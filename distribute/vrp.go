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
// most most. Each phase costs every worker a round trip, a = max a_i (an
// intercept within its standard error counts as that error: a fit through
// ranges much longer than a round trip can put a_i at or below zero, and
// round trips are not free). A split in proportion to the speeds takes B = total/Σ(1/b_i), and ends
// uneven by the error of the speeds' estimate on one phase's range, ε·B/k,
// ε the models' relative standard error of a range's time (Predict's SE
// over its time at the worker's share, the largest over the workers; no
// less than 5%, as three calibrated sizes know no speed better, and no
// more than 50%, half a range). The k minimizing k·a + ε·B/k is √(ε·B/a).
// A small problem with costly round trips goes out in one phase, a static
// VRP split: the seed's finding that VRP-SS pays for its messages where
// the work is small. Models without a positive slope, or whose intercepts
// are zero with no error, give most.
func Phases(models []*perfmodel.Model, total, most int) int {
	most = max(most, 1)
	if total <= 0 || len(models) == 0 {
		return most
	}
	var a, speed float64
	slopes := make([]float64, len(models))
	for i, m := range models {
		e0 := m.Predict(0, 0)
		a0 := e0.T
		b := (m.Predict(float64(total), 0).T - a0) / float64(total)
		if !(b > 0) || math.IsInf(b, 1) {
			return most
		}
		slopes[i] = b
		speed += 1 / b
		a = math.Max(a, math.Max(a0, e0.SE))
	}
	if !(a > 0) {
		return most
	}
	eps := 0.0
	for i, m := range models {
		share := float64(total) / slopes[i] / speed
		if e := m.Predict(share, 0); e.T > 0 {
			eps = math.Max(eps, e.SE/e.T)
		}
	}
	eps = math.Min(math.Max(eps, 0.05), 0.5)
	k := math.Round(math.Sqrt(eps * float64(total) / speed / a))
	return int(math.Max(1, math.Min(k, float64(most))))
}
