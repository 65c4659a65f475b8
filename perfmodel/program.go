package perfmodel

import (
	"fmt"
	"math"
)

// Part is one region of a program model: its model evaluated at Arg(n, p)
// and counted Count(n, p) times (for example (p − 1) sends of n²/(p − 1)
// rows each). Nil Arg evaluates the model at (n, p); nil Count counts 1.
type Part struct {
	Name  string                                // the region's name
	Model *Model                                // the region's fitted model
	Arg   func(n, p float64) (float64, float64) // the point the model is evaluated at (nil: (n, p))
	Count func(n, p float64) float64            // how many times the region runs (nil: once)
}

// Program composes region models into a model of a whole program: its
// time is the sum of its parts' (T_total = Σ Count_i · T_i(Arg_i)).
type Program struct {
	Parts []Part // the regions, whose times add up
}

// Predict returns the program's time at (n, p). Parts are taken as
// independent: standard errors add in quadrature, each scaled by its count.
func (pg *Program) Predict(n, p float64) Estimate {
	var t, v float64
	for _, pt := range pg.Parts {
		an, ap := n, p
		if pt.Arg != nil {
			an, ap = pt.Arg(n, p)
		}
		c := 1.0
		if pt.Count != nil {
			c = pt.Count(n, p)
		}
		e := pt.Model.Predict(an, ap)
		t += c * e.T
		v += c * c * e.SE * e.SE
	}
	return Estimate{T: t, SE: math.Sqrt(v)}
}

// Breakdown returns each part's share of the predicted time at (n, p).
func (pg *Program) Breakdown(n, p float64) map[string]float64 {
	out := map[string]float64{}
	for i, pt := range pg.Parts {
		one := Program{Parts: pg.Parts[i : i+1]}
		name := pt.Name
		if name == "" {
			name = fmt.Sprint(i)
		}
		out[name] += one.Predict(n, p).T
	}
	return out
}

// VRP is the relative performance vector of machines whose models give
// the time of the same work at (n, p): entry i is how many times machine i
// is faster than the slowest (which gets 1). A machine whose model predicts
// no positive time gets the largest entry of the others.
func VRP(models []*Model, n, p float64) []float64 {
	times := make([]float64, len(models))
	for i, m := range models {
		times[i] = m.Predict(n, p).T
	}
	return VRPFromTimes(times)
}

// VRPFromTimes is VRP from measured times of the same work, one per machine.
func VRPFromTimes(times []float64) []float64 {
	slow := 0.0
	for _, t := range times {
		if t > 0 && !math.IsInf(t, 1) {
			slow = math.Max(slow, t)
		}
	}
	v := make([]float64, len(times))
	top := 1.0
	for i, t := range times {
		if t > 0 && slow > 0 && !math.IsInf(t, 1) {
			v[i] = slow / t
			top = math.Max(top, v[i])
		}
	}
	for i := range v {
		if v[i] == 0 {
			v[i] = top
		}
	}
	return v
}
