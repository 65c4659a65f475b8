package perfmodel

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

func near(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %.6g, want %.6g (±%.2g%%)", what, got, want, 100*rel)
	}
}

// exact evaluates Σ coef·term at (n, p).
func exact(form Form, coef []float64, n, p float64) float64 {
	var t float64
	for j, term := range form {
		t += coef[j] * term.at(n, p)
	}
	return t
}

func TestFitRecoversLinear(t *testing.T) {
	// T(m) = 35 µs + m / 1.2 GB/s with 1% multiplicative noise, 20
	// samples per size.
	rng := rand.New(rand.NewPCG(1, 2))
	var samples []Sample
	for _, m := range []float64{0, 1 << 10, 1 << 14, 1 << 16, 1 << 18, 1 << 20} {
		for range 20 {
			want := 35e-6 + m/1.2e9
			samples = append(samples, Sample{N: m, T: want * (1 + 0.01*rng.NormFloat64())})
		}
	}
	obs := Summarize(samples, Rule{})
	for _, w := range []Weighting{Absolute, Relative} {
		m, err := Fit(Linear(), obs, w)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "a", m.Coef[0], 35e-6, 0.02)
		near(t, "1/b", m.Coef[1], 1/1.2e9, 0.02)
		if m.R2 < 0.999 || m.AdjR2 > m.R2 || m.Points != 6 {
			t.Errorf("goodness %v", m)
		}
		// The coefficients' standard errors are small but not zero.
		if !(m.SE[1] > 0 && m.SE[1] < 0.01*m.Coef[1]) {
			t.Errorf("SE %v for %v", m.SE, m.Coef)
		}
	}
}

func TestFitRecoversPolyAndTwoVariable(t *testing.T) {
	cubic := []float64{-2.14, 7.4e-3, -5.2e-6, 3.0e-9}
	var obs []Observation
	for n := 500.0; n <= 2500; n += 250 {
		obs = append(obs, Observation{N: n, T: exact(Poly(3), cubic, n, 0)})
	}
	m, err := Fit(Poly(3), obs, Absolute)
	if err != nil {
		t.Fatal(err)
	}
	for j := range cubic {
		near(t, "cubic coefficient", m.Coef[j], cubic[j], 1e-6)
	}

	// δ(n, p) = (7.57e-9 + 6.26e-7/p)·n² + (−5.78e-4 + 1.3e-3/p)·n + (−1.99 + 8.74/p)
	form := Terms(2, 0, -1)
	coef := []float64{-1.99, 8.74, -5.78e-4, 1.3e-3, 7.57e-9, 6.26e-7}
	obs = obs[:0]
	for _, p := range []float64{2, 3, 4} {
		for n := 1000.0; n <= 5000; n += 1000 {
			obs = append(obs, Observation{N: n, P: p, T: exact(form, coef, n, p)})
		}
	}
	m, err = Fit(form, obs, Relative)
	if err != nil {
		t.Fatal(err)
	}
	for j := range coef {
		near(t, "δ(n,p) coefficient "+form[j].String(), m.Coef[j], coef[j], 1e-6)
	}
	got := m.Predict(8000, 6)
	near(t, "prediction at (8000, 6)", got.T, exact(form, coef, 8000, 6), 1e-6)
	if m.String() == "" || form.String() != "1 + 1/p + n + n/p + n^2 + n^2/p" {
		t.Errorf("form %q", form.String())
	}
}

func TestRuleDropsAnomalies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var ts []float64
	for range 50 {
		ts = append(ts, 1+0.02*rng.NormFloat64())
	}
	outliers := []float64{3, 1.5, 0.2, 12}
	ts = append(ts, outliers...)
	keep, drop := Rule{}.Split(ts)
	if len(drop) != len(outliers) || len(keep) != 50 {
		t.Fatalf("dropped %v, want %v", drop, outliers)
	}
	for i := range drop {
		if drop[i] != outliers[i] {
			t.Fatalf("dropped %v, want %v", drop, outliers)
		}
	}
	// Exactly equal samples with one stray: the floor keeps the group.
	keep, drop = Rule{}.Split([]float64{2, 2, 2, 2, 2.01, 9})
	if len(keep) != 5 || len(drop) != 1 || drop[0] != 9 {
		t.Fatalf("keep %v drop %v", keep, drop)
	}
	// Too few samples to judge: all kept.
	if keep, drop := (Rule{}).Split([]float64{1, 100}); len(keep) != 2 || drop != nil {
		t.Fatalf("keep %v drop %v", keep, drop)
	}
}

// A fit through the selection rule recovers the coefficients that 10%
// of gross anomalies (a preempted process) pull far off without it.
func TestFitIgnoresAnomalies(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	quad := []float64{0.3, -5.9e-4, 2.9e-6}
	var samples []Sample
	for n := 500.0; n <= 2000; n += 250 {
		for i := range 30 {
			want := exact(Poly(2), quad, n, 0)
			s := want * (1 + 0.005*rng.NormFloat64())
			if i%10 == 3 {
				s *= 2 + rng.Float64() // a descheduled run
			}
			samples = append(samples, Sample{N: n, T: s})
		}
	}
	fitWith := func(r Rule) *Model {
		obs := Summarize(samples, r)
		m, err := Fit(Poly(2), obs, Relative)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := fitWith(Rule{})
	for j := range quad {
		near(t, "coefficient", m.Coef[j], quad[j], 0.05)
	}
	for _, o := range Summarize(samples, Rule{}) {
		if o.Dropped != 3 || o.Kept != 27 {
			t.Errorf("n=%v: kept %d dropped %d, want 27 and 3", o.N, o.Kept, o.Dropped)
		}
	}
	loose := fitWith(Rule{K: 1e9})
	if math.Abs(loose.Predict(1500, 0).T/exact(Poly(2), quad, 1500, 0)-1) < 0.1 {
		t.Errorf("without the rule the fit is still close: the anomalies do not test anything")
	}
}

// About 95% of new noisy measurements fall within two standard errors of
// the prediction, at points not fitted.
// An observation carries the mean of the samples the rule kept and their
// median, which a right-skewed group pulls less.
func TestSummarizeMeanAndMedian(t *testing.T) {
	ts := []float64{1.0, 1.0, 1.1, 1.2, 1.6, 1.9, 30} // 30: dropped
	var samples []Sample
	for _, v := range ts {
		samples = append(samples, Sample{N: 8, T: v})
	}
	obs := Summarize(samples, Rule{})
	if len(obs) != 1 || obs[0].Kept != 6 || obs[0].Dropped != 1 {
		t.Fatalf("%+v", obs)
	}
	near(t, "mean", obs[0].T, (1.0+1.0+1.1+1.2+1.6+1.9)/6, 1e-9)
	near(t, "median", obs[0].Median, (1.1+1.2)/2, 1e-9)
}

func TestPredictionErrorCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	lin := []float64{1e-3, 2e-7}
	noisy := func(n float64) float64 { return exact(Linear(), lin, n, 0) + 2e-5*rng.NormFloat64() }
	var obs []Observation
	for n := 1000.0; n <= 10000; n += 500 {
		obs = append(obs, Observation{N: n, T: noisy(n)})
	}
	m, err := Fit(Linear(), obs, Absolute)
	if err != nil {
		t.Fatal(err)
	}
	in, total := 0, 0
	for n := 1250.0; n <= 14000; n += 250 {
		e := m.Predict(n, 0)
		if math.Abs(noisy(n)-e.T) <= 2*e.SE {
			in++
		}
		total++
	}
	if frac := float64(in) / float64(total); frac < 0.85 || frac > 0.995 {
		t.Errorf("%.0f%% of new points within 2 SE, want about 95%%", 100*frac)
	}
	if !m.Extrapolates(14000, 0) || m.Extrapolates(5000, 0) {
		t.Errorf("range [%v, %v]", m.NMin, m.NMax)
	}
}

func TestFitErrors(t *testing.T) {
	obs := []Observation{{N: 1, P: 4, T: 1}, {N: 2, P: 4, T: 2}, {N: 3, P: 4, T: 3}}
	if _, err := Fit(Terms(1, 0, -1), obs, Absolute); !errors.Is(err, ErrTooFewPoints) {
		t.Errorf("4 terms, 3 points: %v", err)
	}
	obs = append(obs, Observation{N: 4, P: 4, T: 4})
	if _, err := Fit(Terms(1, 0, -1), obs, Absolute); !errors.Is(err, ErrIllConditioned) {
		t.Errorf("a term in p at one p: %v", err)
	}
	if _, err := Fit(Linear(), []Observation{{N: 1, T: 0}, {N: 2, T: 1}}, Relative); err == nil {
		t.Error("relative fit of a zero time accepted")
	}
}

func TestProgramAndVRP(t *testing.T) {
	lin := &Model{Form: Linear(), Coef: []float64{1e-4, 1e-9}}
	quad := &Model{Form: Poly(2), Coef: []float64{0, 0, 1e-8}}
	// Heat-like: (p−1) sends of n²·8/(p−1) bytes, then n² work split over p.
	pg := Program{Parts: []Part{
		{Name: "send", Model: lin,
			Arg:   func(n, p float64) (float64, float64) { return 8 * n * n / (p - 1), p },
			Count: func(n, p float64) float64 { return p - 1 }},
		{Name: "compute", Model: quad, Count: func(n, p float64) float64 { return 1 / p }},
	}}
	n, p := 1000.0, 5.0
	want := 4*(1e-4+1e-9*8*n*n/4) + 1e-8*n*n/5
	near(t, "program", pg.Predict(n, p).T, want, 1e-12)
	bd := pg.Breakdown(n, p)
	near(t, "send part", bd["send"], 4*(1e-4+1e-9*8*n*n/4), 1e-12)

	fast := &Model{Form: Poly(1), Coef: []float64{0, 1}}
	slow := &Model{Form: Poly(1), Coef: []float64{0, 4}}
	mid := &Model{Form: Poly(1), Coef: []float64{0, 2}}
	v := VRP([]*Model{fast, slow, mid}, 100, 0)
	if v[0] != 4 || v[1] != 1 || v[2] != 2 {
		t.Errorf("VRP = %v, want [4 1 2]", v)
	}
	if v := VRPFromTimes([]float64{2, 0, 1}); v[0] != 1 || v[1] != 2 || v[2] != 2 {
		t.Errorf("VRPFromTimes = %v, want [1 2 2]", v)
	}
}

func TestSetJSON(t *testing.T) {
	var obs []Observation
	for n := 1.0; n <= 8; n++ {
		obs = append(obs, Observation{N: n, T: 3 + 2*n + 0.01*math.Sin(n)})
	}
	m, err := Fit(Linear(), obs, Absolute)
	if err != nil {
		t.Fatal(err)
	}
	var s Set
	s.Put("loop", m)
	dir := t.TempDir()
	path := filepath.Join(dir, "models.json")
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := back.Get("loop")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := m.Predict(20, 0), bm.Predict(20, 0); a != b || bm.Name != "loop" {
		t.Errorf("loaded model predicts %v, saved %v", b, a)
	}
	if _, err := back.Get("none"); err == nil {
		t.Error("missing model found")
	}
	for _, bad := range []string{`{"models":{"x":null}}`, `{"models":{"x":{"form":[{"n":0}],"coef":[]}}}`, `{`} {
		if _, err := Read(bytes.NewBufferString(bad)); err == nil {
			t.Errorf("Read(%s) accepted", bad)
		}
	}
}
