package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pcor-go/pcor/perfmodel"
	"github.com/pcor-go/pcor/perfmodel/perfplot"
)

// loadRuns reads every samples-*.json in dir and merges the samples of
// the same process count and the same side of fitN: those of the plates
// fitN reports are marked Fit (fitN nil: none is).
func loadRuns(dir string, fitN func(n int) bool) ([]Samples, error) {
	files, err := filepath.Glob(filepath.Join(dir, "samples-*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no samples-*.json in %s", dir)
	}
	type key struct {
		p   int
		fit bool
	}
	byKey := map[key]*Samples{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s Samples
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		// The samples of each plate size, or of the whole run when
		// they were saved together.
		parts := map[int]map[string][]perfmodel.Sample{}
		for n, regs := range s.Plates {
			parts[n] = regs
		}
		if len(parts) == 0 {
			widest := 0.0
			for _, t := range s.Regions["total"] {
				widest = math.Max(widest, t.N)
			}
			parts[int(widest)] = s.Regions
		}
		for n, regs := range parts {
			k := key{s.P, fitN != nil && fitN(n)}
			m := byKey[k]
			if m == nil {
				m = &Samples{P: s.P, Iters: s.Iters, Fit: k.fit, Regions: map[string][]perfmodel.Sample{}}
				byKey[k] = m
			}
			if m.Iters != s.Iters {
				return nil, fmt.Errorf("%s: %d iterations, others %d", f, s.Iters, m.Iters)
			}
			for k, v := range regs {
				m.Regions[k] = append(m.Regions[k], v...)
			}
			if l := s.Load[n]; len(l) > 0 {
				if m.Load == nil {
					m.Load = map[int][]float64{}
				}
				m.Load[n] = append(m.Load[n], l...)
			}
		}
	}
	var runs []Samples
	for _, s := range byKey {
		runs = append(runs, *s)
	}
	slices.SortFunc(runs, func(a, b Samples) int {
		if a.P != b.P {
			return a.P - b.P
		}
		if a.Fit == b.Fit {
			return 0
		}
		if a.Fit {
			return -1
		}
		return 1
	})
	return runs, nil
}

// The model follows the machine, region by region (PEMPIs-Het's form:
// communication = latency + bytes/bandwidth per message, computation =
// work / speed of the slowest worker):
//
//   - scatter: the master sends each of the p−1 workers its block, each
//     send waiting for the worker to take it: (p−1)·a + b·B, with B = 8·N²
//     the plate's bytes (the seed's (p−1)·(a + b·m), m = B/(p−1));
//   - iterations: the workers are kept in step by the halo exchange, so
//     each waits for the slowest. That worker's wall time per iteration is
//     its CPU time for one over the share s_p of a CPU it gets (its quota,
//     or less when the p processes and the machine's other work want more
//     than the two CPUs), measured per process count on the fitted
//     plates. Its CPU time is measured in two regions: the sweep's,
//     S(x) = b·x + c·x·m(16x) for its x points, a cost per point that
//     rises once the block's 16x bytes outgrow a cache (sweepForm), and
//     the rest, R(x, p) = a + c·p + e·x + f·x·p: the halo exchange and the waits for the
//     neighbours, whose spins are longer the more processes share the two
//     CPUs, and the kernel's switches of the worker off and onto a CPU,
//     which preempt a sweep the more often the longer it runs (a profile
//     of a worker at N = 1792, p = 4: 65% of its CPU time in the sweep,
//     12-14% in the kernel's scheduling, 1% copying the halo rows). The
//     x·p term: the more processes take turns on the two CPUs, the more
//     a point costs in the switches;
//   - collect: the rest of a solve (the workers' unpacking and packing and
//     the return of the blocks), in the same form as the scatter.
//
// With the sweep as a line, a + b·x + c·x·p, the model was 36% low at 640
// at p = 7 on the Intel VM (sweepForm). Without the x·p terms (S = a +
// b·x, R = a + c·p + e·x) the model was
// 14-24% high on every plate at p = 3 and 19-41% high on the small plates
// at p = 7 on a quiet machine (worst 30.5% over the plates not fitted).
// Earlier models fitted the CPU time per iteration as one region, a +
// c·p + b·x, fitted on N <= 1024, it predicted the large plates 6-26% low
// on a quiet machine (every one low: both parts grow faster than a line
// through the small plates), and before that
// the wall time as a + b·x + c·p + d·x·p (16-28% low at p = 6-7).
const (
	regScatter = "scatter"
	regCollect = "collect"
	regCPU     = "slowest-cpu"       // CPU time per iteration of the slowest worker
	regSweep   = "slowest-sweep-cpu" // the part of it in its sweep
	regRest    = "slowest-rest-cpu"  // the rest: halo exchange, pcor, runtime
	regWall    = "slowest"           // its wall time per iteration
	regCache   = "sweep-cache-bytes" // the cache C of the sweep's model, bytes (a constant)
)

// commForm is (p−1)·a + b·B, evaluated at (B, p−1).
var commForm = perfmodel.Form{{P: 1}, {N: 1}}

// commArg maps a plate (N, p) to the scatter's and the collection's
// arguments: the plate's bytes and the number of blocks.
func commArg(n, p float64) (float64, float64) { return 8 * n * n, p - 1 }

// points is x, the points of the largest block of plate N among p−1
// workers.
func points(n, p float64) float64 { return n * math.Ceil(n/(p-1)) }

// The sweep's CPU time per iteration follows its block's working set
// against a cache: S(x) = b·x + c·x·m(W), W = 16·x bytes (the sweep reads
// the block and writes its next copy, a float64 each per point), m(W) =
// max(0, 1 − C/W) the share of a working set of W bytes that a cache of C
// bytes cannot hold (a block that fits costs b a point; the part beyond
// C costs c more a point). C is fitted by least squares with b and c (the
// profile over a geometric grid: each C a linear fit of b and c, the C of
// the least squared error kept), on the fitted plates alone.
//
// On the Intel Xeon VM this was measured on, the sweep's CPU per point is
// flat at 1.43-1.57 ns from 0.7 to 5.5 MB blocks (across the 2 MiB L2 the
// sysfs reports, so not that cache) and rises beyond, to 1.65 ns at 8.5
// MB and 1.86-2.14 ns at 12-17 MB (the workers take turns on the two CPUs
// and share the host's last-level cache, of which this VM gets far less
// than the 300 MiB sysfs reports): C comes out at about 7 MB. The line
// a + b·x + c·x·p it replaces was dragged by the large blocks to a
// negative intercept and a negative x·p term, and predicted the small
// blocks 17-63% low (640 at p = 5-7). On the AMD machine before it, the
// cost per point grew with p instead (1.0-1.1 ns at p = 3-4, 1.15-1.4 ns
// at p = 7), which this form does not follow: there C would be fitted to
// whatever bend the blocks showed.
var sweepForm = perfmodel.Form{{N: 1}, {P: 1}} // b·x + c·z, evaluated at (x, z = x·m(16x))

// bytesPerPoint is the sweep's working set per point of its block: the
// block and its next copy.
const bytesPerPoint = 16

// missShare is m(W) = max(0, 1 − C/W): the share of a working set of w
// bytes that a cache of c bytes cannot hold.
func missShare(w, c float64) float64 {
	if !(w > c) {
		return 0
	}
	return 1 - c/w
}

// sweepArg maps a block of x points (and p) to the sweep model's
// arguments with a cache of c bytes: (x, x·m(16x)).
func sweepArg(c float64) func(x, p float64) (float64, float64) {
	return func(x, _ float64) (float64, float64) { return x, x * missShare(bytesPerPoint*x, c) }
}

// cacheGrid is the cache sizes the sweep's fit tries: 64 KiB to 1 GiB, 2%
// apart.
func cacheGrid() []float64 {
	var cs []float64
	for c := 64.0 * 1024; c <= 1<<30; c *= 1.02 {
		cs = append(cs, c)
	}
	return cs
}

// fitSweep fits S(x) = b·x + c·x·m(16x) and the cache C to the sweep's
// observations (x, p): for every C of cacheGrid the linear fit of b and
// c, keeping the C whose fit leaves the least squared error (absolute
// residuals: the large blocks weigh most). A C whose column is all zeros
// (no block outgrows it) cannot be fitted and is skipped; with none
// fitted, an error.
func fitSweep(obs []perfmodel.Observation) (*perfmodel.Model, float64, error) {
	var best *perfmodel.Model
	bestC, bestSSE := 0.0, math.Inf(1)
	var firstErr error
	for _, c := range cacheGrid() {
		arg := sweepArg(c)
		at := make([]perfmodel.Observation, len(obs))
		for i, o := range obs {
			at[i] = o
			at[i].N, at[i].P = arg(o.N, o.P)
		}
		m, err := perfmodel.Fit(sweepForm, at, perfmodel.Absolute)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		sse := m.RMSE * m.RMSE * float64(m.Points)
		if sse < bestSSE {
			best, bestC, bestSSE = m, c, sse
		}
	}
	if best == nil {
		return nil, 0, firstErr
	}
	return best, bestC, nil
}

// restForm is the rest of the CPU time per iteration of a worker with two
// neighbours, a + c·p + e·x + f·x·p, evaluated at (x, p) (restArg; with
// one neighbour, at p = 3 alone, a + e·x): its part that grows with the
// block (the kernel's switches, a sweep preempted the more often the
// longer it runs) grows faster the more processes take turns on the CPUs.
// Without the x·p term the rest at p = 7 was 27-38% high on the small
// plates on a quiet machine (the small plates' rest is lower at p = 7 than
// a common slope in x makes it).
var restForm = perfmodel.Form{{}, {P: 1}, {N: 1}, {N: 1, P: 1}}

// restArg maps a plate (N, p) to the rest's arguments: the points of the
// largest block, and p.
func restArg(n, p float64) (float64, float64) { return points(n, p), p }

// neighbours is how many halo rows the slowest worker exchanges an
// iteration with p processes: at p = 3 both workers are at an edge of the
// plate and have one neighbour; from p = 4 the slowest is one in the
// middle, with two. The rest is modelled apart for each count (restName):
// on a quiet machine it was 127-175 µs an iteration at p = 3 against
// 215-262 µs at p = 4-7 on the same plates, a step that the term c·p
// spread over every p (the rest 8-23% high at p = 3, up to 25% low at
// p = 4).
func neighbours(p int) int { return max(0, min(p-2, 2)) }

// restName is the name of the rest's model for k neighbours.
func restName(k int) string { return fmt.Sprintf("%s/neighbours=%d", regRest, k) }

func shareName(p int) string { return fmt.Sprintf("share/p=%d", p) }

// program composes the region models of process count p into the solver's
// model:
//
//	T(N) = T_scatter(8N², p−1) + I·(S(x, p) + R(x, p))/s_p + T_collect(8N², p−1)
//
// with S + R the slowest worker's CPU time per iteration (its sweep's, S at
// (x, x·m(16x)) with the set's cache C, and
// the rest) and s_p its share of a CPU.
func program(set *perfmodel.Set, iters, p int) (*perfmodel.Program, error) {
	sc, err := set.Get(regScatter)
	if err != nil {
		return nil, err
	}
	co, err := set.Get(regCollect)
	if err != nil {
		return nil, err
	}
	sweep, err := set.Get(regSweep)
	if err != nil {
		return nil, err
	}
	cache, err := set.Get(regCache)
	if err != nil {
		return nil, err
	}
	sweepAt := sweepArg(cache.Coef[0])
	rest, err := set.Get(restName(neighbours(p)))
	if err != nil {
		return nil, err
	}
	share, err := set.Get(shareName(p))
	if err != nil {
		return nil, err
	}
	s := share.Predict(0, 0).T
	if !(s > 0) {
		return nil, fmt.Errorf("p=%d: CPU share %g", p, s)
	}
	return &perfmodel.Program{Parts: []perfmodel.Part{
		{Name: regScatter, Model: sc, Arg: commArg},
		{Name: "sweeps", Model: sweep, Arg: func(n, p float64) (float64, float64) { return sweepAt(points(n, p), p) },
			Count: func(float64, float64) float64 { return float64(iters) / s }},
		{Name: "exchanges", Model: rest, Arg: restArg,
			Count: func(float64, float64) float64 { return float64(iters) / s }},
		{Name: regCollect, Model: co, Arg: commArg},
	}}, nil
}

// sampleRule drops the samples far from their configuration's median (a
// process descheduled for long, the machine's other work).
var sampleRule = perfmodel.Rule{}

// fitRegions fits the region models on the fit runs' samples.
func fitRegions(runs []Samples, fitted func(Samples) bool, b *strings.Builder) (*perfmodel.Set, []int, error) {
	set := &perfmodel.Set{Observations: map[string][]perfmodel.Observation{}}
	comm := map[string][]perfmodel.Sample{}
	var sweep []perfmodel.Sample
	rest := map[int][]perfmodel.Sample{} // by the slowest worker's neighbours
	share := map[int][]perfmodel.Sample{}
	var ps []int
	for _, r := range runs {
		if !fitted(r) {
			continue
		}
		if !slices.Contains(ps, r.P) {
			ps = append(ps, r.P)
		}
		for _, name := range []string{regScatter, regCollect} {
			for _, s := range r.Regions[name] {
				s.N, s.P = commArg(s.N, s.P)
				comm[name] = append(comm[name], s)
			}
		}
		sweep = append(sweep, r.Regions[regSweep]...)
		rest[neighbours(r.P)] = append(rest[neighbours(r.P)], r.Regions[regRest]...)
		walls := r.Regions[regWall]
		for i, s := range r.Regions[regCPU] {
			if i < len(walls) && walls[i].T > 0 {
				share[r.P] = append(share[r.P], perfmodel.Sample{T: s.T / walls[i].T})
			}
		}
	}
	slices.Sort(ps)
	fit := func(name string, form perfmodel.Form, samples []perfmodel.Sample, w perfmodel.Weighting) error {
		obs := perfmodel.Summarize(samples, sampleRule)
		// Each configuration by the median of its samples, as the table
		// judges a prediction against the median solve: the rest of the
		// CPU time is skewed (its mean 5-20% above its median at load
		// 11), and a model of means ran high.
		for i := range obs {
			obs[i].T = obs[i].Median
		}
		m, err := perfmodel.Fit(form, obs, w)
		if err != nil {
			return fmt.Errorf("region %s: %w", name, err)
		}
		set.Put(name, m)
		set.Observations[name] = obs
		dropped, kept := 0, 0
		for _, o := range obs {
			dropped += o.Dropped
			kept += o.Kept
		}
		fmt.Fprintf(b, "    %v; %d samples kept, %d dropped\n", m, kept, dropped)
		return nil
	}
	for _, name := range []string{regScatter, regCollect} {
		if err := fit(name, commForm, comm[name], perfmodel.Absolute); err != nil {
			return nil, nil, err
		}
	}
	// The sweep with the cache its blocks outgrow (fitSweep), on the
	// medians of its configurations.
	obs := perfmodel.Summarize(sweep, sampleRule)
	for i := range obs {
		obs[i].T = obs[i].Median
	}
	m, c, err := fitSweep(obs)
	if err != nil {
		return nil, nil, fmt.Errorf("region %s: %w", regSweep, err)
	}
	set.Put(regSweep, m)
	set.Observations[regSweep] = obs
	set.Put(regCache, &perfmodel.Model{Form: perfmodel.Form{{}}, Coef: []float64{c}, SE: []float64{0}, Points: m.Points})
	kept, dropped := 0, 0
	for _, o := range obs {
		kept += o.Kept
		dropped += o.Dropped
	}
	fmt.Fprintf(b, "    %s: S(x) = %.4g·x + %.4g·x·m(16x), m(W) = max(0, 1 − C/W), C = %.2f MB  (R² %.4f, RMSE %.3g s, worst %.1f%%, %d points); %d samples kept, %d dropped\n",
		regSweep, m.Coef[0], m.Coef[1], c/1e6, m.R2, m.RMSE, 100*m.MaxRelErr, m.Points, kept, dropped)
	for _, k := range slices.Sorted(maps.Keys(rest)) {
		// With one process count among the samples (p = 3: one
		// neighbour) the rest is a + e·x.
		form := restForm
		if ps := distinctP(rest[k]); ps < 2 {
			form = perfmodel.Form{{}, {N: 1}}
		}
		if err := fit(restName(k), form, rest[k], perfmodel.Absolute); err != nil {
			return nil, nil, err
		}
	}
	for _, p := range ps {
		// The share is a constant: the mean of the solves' shares the
		// rule keeps, each solve an observation.
		var ts []float64
		for _, s := range share[p] {
			ts = append(ts, s.T)
		}
		keep, drop := sampleRule.Split(ts)
		var obs []perfmodel.Observation
		for _, t := range keep {
			obs = append(obs, perfmodel.Observation{T: t, Kept: 1})
		}
		m, err := perfmodel.Fit(perfmodel.Form{{}}, obs, perfmodel.Absolute)
		if err != nil {
			return nil, nil, fmt.Errorf("share of a CPU at p=%d: %w", p, err)
		}
		set.Put(shareName(p), m)
		fmt.Fprintf(b, "    %s: %.4f ± %.4f (the slowest worker's CPU time over its wall time; %d solves kept, %d dropped)\n",
			shareName(p), m.Coef[0], m.SE[0], len(keep), len(drop))
	}
	return set, ps, nil
}

// distinctP is the number of different process counts among samples.
func distinctP(samples []perfmodel.Sample) int {
	seen := map[float64]bool{}
	for _, s := range samples {
		seen[s.P] = true
	}
	return len(seen)
}

// parseFit reads -fit: "3,4" names the runs with those process counts
// (fitP), "n<=512" the plates at most 512 points wide, "n=512,1024" the
// plates of those sizes (fitN; both of every process count).
func parseFit(fitList string) (fitN func(int) bool, fitP map[int]bool, desc string, err error) {
	bad := fmt.Errorf("bad -fit %q", fitList)
	fitP = map[int]bool{}
	if v, ok := strings.CutPrefix(fitList, "n<="); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, nil, "", bad
		}
		return func(m int) bool { return m <= n }, fitP, fmt.Sprintf("plates N ≤ %d (every process count)", n), nil
	}
	if v, ok := strings.CutPrefix(fitList, "n="); ok {
		ns := map[int]bool{}
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return nil, nil, "", bad
			}
			ns[n] = true
		}
		return func(m int) bool { return ns[m] }, fitP, fmt.Sprintf("plates N = %s (every process count)", v), nil
	}
	for _, f := range strings.Split(fitList, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, nil, "", bad
		}
		fitP[p] = true
	}
	return nil, fitP, "p = " + fitList, nil
}

// analyzeRuns fits the region models on the runs fitList names (parseFit)
// and predicts the others.
func analyzeRuns(in, out, fitList string) error {
	fitN, fitP, fitDesc, err := parseFit(fitList)
	if err != nil {
		return err
	}
	runs, err := loadRuns(in, fitN)
	if err != nil {
		return err
	}
	fitted := func(r Samples) bool { return r.Fit || fitP[r.P] }
	iters := runs[0].Iters
	for _, r := range runs {
		if r.Iters != iters {
			return fmt.Errorf("runs with %d and %d iterations", iters, r.Iters)
		}
		for _, name := range []string{regWall, regSweep} {
			if len(r.Regions[name]) == 0 {
				return fmt.Errorf("p=%d: no %q samples (samples of an older run?)", r.P, name)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Region models, fitted on the runs with %s (samples beyond %g·1.4826·MAD of their configuration's median dropped, each configuration fitted by the median of the rest; the slowest worker's CPU time per iteration in its sweep and the rest, each by its points x and p, and its share of a CPU per process count). The scatter and the collection are printed in n = B, the plate's bytes 8N², and p = the p−1 blocks; the sweep's CPU time in x and the cache C fitted with it, the rest in n = x:\n\n", fitDesc, 3.0)
	set, ps, err := fitRegions(runs, fitted, &b)
	if err != nil {
		return err
	}
	programs := map[int]*perfmodel.Program{}
	for _, p := range ps {
		if programs[p], err = program(set, iters, p); err != nil {
			return err
		}
	}
	fmt.Fprintf(&b, "\nProgram model: T(N,p) = T_scatter(8N², p−1) + %d·(S(x,p) + R(x,p))/s_p + T_collect(8N², p−1), x = N·⌈N/(p−1)⌉\n\n", iters)

	// The Table 1 analogue: every (N, p) run not used in the fit. The
	// measured time is the median of the solves, with their range and
	// mean: a throttled solve's time is skewed (a stall or none), and the
	// range tells the machine's noise from the model's error. Beside it,
	// the machine's load during those solves and the share of a CPU the
	// slowest worker got over its iterations, against the share the fit
	// runs of that process count gave it: a configuration that got less
	// runs longer than a model fitted on them tells.
	const header = "| N | p | estimated (s) | ± SE | measured: median (s) | [lowest–highest] | mean (solves) | error vs median | load | CPU share: measured / model |\n|---|---|---|---|---|---|---|---|---|---|\n"
	b.WriteString(header)
	worst, count, within := 0.0, 0, 0
	var fitRows, regionRows strings.Builder
	est := map[int]perfplot.Series{}
	meas := map[int]perfplot.Series{}
	for _, r := range runs {
		pg := programs[r.P]
		if pg == nil {
			return fmt.Errorf("p=%d: no fitted models of that process count", r.P)
		}
		for _, o := range perfmodel.Summarize(r.Regions["total"], sampleRule) {
			e := pg.Predict(o.N, o.P)
			med, lo, hi := solveSpread(r.Regions["total"], o.N, o.P)
			errPct := 100 * (e.T - med) / med
			x := points(o.N, o.P)
			line := fmt.Sprintf("| %.0f | %.0f | %.3f | %.3f | %.3f | [%.3f–%.3f] | %.3f (%d) | %+.2f%% | %.1f | %.1f%% / %.1f%% |\n",
				o.N, o.P, e.T, e.SE, med, lo, hi, o.T, o.Kept, errPct, median(r.Load[int(o.N)]),
				100*medianOf(r.Regions[regCPU], x, o.P, o.N)/medianOf(r.Regions[regWall], x, o.P, o.N),
				100*set.Models[shareName(r.P)].Predict(0, 0).T)
			if fitted(r) {
				fitRows.WriteString(line)
				continue
			}
			b.WriteString(line)
			worst = math.Max(worst, math.Abs(errPct))
			count++
			if math.Abs(errPct) <= 10 {
				within++
			}
			s, m := est[r.P], meas[r.P]
			s.Name, m.Name, m.Points = fmt.Sprintf("p=%d model", r.P), fmt.Sprintf("p=%d measured", r.P), true
			s.X, s.Y = append(s.X, o.N), append(s.Y, e.T)
			m.X, m.Y = append(m.X, o.N), append(m.Y, med)
			est[r.P], meas[r.P] = s, m
			// Which region misses: each region's model against the median
			// of its samples in this configuration.
			bn, bp := commArg(o.N, o.P)
			cell := func(pred, m float64) string { return fmt.Sprintf(" %.4g / %.4g (%+.0f%%) |", pred, m, 100*(pred-m)/m) }
			fmt.Fprintf(&regionRows, "| %.0f | %.0f |", o.N, o.P)
			regionRows.WriteString(cell(set.Models[regScatter].Predict(bn, bp).T, medianOf(r.Regions[regScatter], o.N, o.P, 0)))
			sw := set.Models[regSweep].Predict(sweepArg(set.Models[regCache].Coef[0])(x, o.P)).T
			hb, hp := restArg(o.N, o.P)
			re := set.Models[restName(neighbours(r.P))].Predict(hb, hp).T
			c := sw + re
			regionRows.WriteString(cell(sw, medianOf(r.Regions[regSweep], x, o.P, o.N)))
			regionRows.WriteString(cell(re, medianOf(r.Regions[regRest], hb, o.P, o.N)))
			regionRows.WriteString(cell(c, medianOf(r.Regions[regCPU], x, o.P, o.N)))
			regionRows.WriteString(cell(c/set.Models[shareName(r.P)].Predict(0, 0).T, medianOf(r.Regions[regWall], x, o.P, o.N)))
			regionRows.WriteString(cell(set.Models[regCollect].Predict(bn, bp).T, medianOf(r.Regions[regCollect], o.N, o.P, 0)))
			regionRows.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "\nWorst absolute error over the %d configurations not fitted: %.2f%% (%d of %d within 10%%).\n", count, worst, within, count)
	fmt.Fprintf(&b, "\nEach region's model against the median of its samples (seconds; model / measured), in the configurations not fitted:\n\n| N | p | scatter | slowest worker's sweep CPU per iteration | the rest of its CPU per iteration | its CPU per iteration | its wall time per iteration | collect |\n|---|---|---|---|---|---|---|---|\n%s", regionRows.String())
	fmt.Fprintf(&b, "\nFor reference, the configurations the region models were fitted on:\n\n%s%s", header, fitRows.String())
	fmt.Print(b.String())
	if out == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(out, "RESULTS.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := set.Save(filepath.Join(out, "models.json")); err != nil {
		return err
	}
	var series []perfplot.Series
	for _, r := range runs {
		if s, ok := meas[r.P]; ok {
			series = append(series, s, est[r.P])
		}
	}
	return perfplot.Plot(filepath.Join(out, "table1.svg"), "Heat: predicted and measured run time", "N", "seconds", series...)
}

// medianOf is the median of the samples at (n, p), their N within tol of
// n (a worker's points are within one row of the largest block's).
func medianOf(samples []perfmodel.Sample, n, p, tol float64) float64 {
	var ts []float64
	for _, s := range samples {
		if s.P == p && math.Abs(s.N-n) <= tol {
			ts = append(ts, s.T)
		}
	}
	return median(ts)
}

// median is the median of xs (NaN when empty).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if len(xs)%2 == 0 {
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return xs[len(xs)/2]
}

// solveSpread is the median, lowest and highest of the solve times of
// plate n with p processes.
func solveSpread(total []perfmodel.Sample, n, p float64) (med, lo, hi float64) {
	var ts []float64
	for _, s := range total {
		if s.N == n && s.P == p {
			ts = append(ts, s.T)
		}
	}
	if len(ts) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	slices.Sort(ts)
	med = ts[len(ts)/2]
	if len(ts)%2 == 0 {
		med = (ts[len(ts)/2-1] + ts[len(ts)/2]) / 2
	}
	return med, ts[0], ts[len(ts)-1]
}
