package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pcor-go/pcor/perfmodel"
)

// loadRuns reads every samples-*.json in dir and merges the samples of
// the same process count and the same side of fitN: those of plates at
// most fitN points wide are marked Fit (fitN 0: none is).
func loadRuns(dir string, fitN int) ([]Samples, error) {
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
			k := key{s.P, fitN > 0 && n <= fitN}
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

var regionNames = []string{"scatter", "unpack", "iter", "pack"}

// regionForms are the shapes the regions are fitted in: the scatter in
// the plate's points n² (its bytes) and the process count, the unpacking
// and packing of a block linear in its points x, and one iteration (the
// halo exchange and the sweep, the workers kept in step by the exchange)
// in x and p with a cost per point that grows with p: the p−1 workers
// share the machine's two CPUs and its memory, and each iteration waits
// for the slowest of them, whose delays (a CPU quota's throttling, the
// machine's other work) add up with their number. Fitted as a + b·x + c·p
// (cost per point the same at every p), the iterations of the larger
// plates came out 17-42% low at p = 5 and 6; with the x·p term, 3-17%
// (the same samples, load 25-45).
var regionForms = map[string]perfmodel.Form{
	"scatter": {{}, {N: 2}, {P: 1}},
	"unpack":  perfmodel.Linear(),
	"iter":    {{}, {N: 1}, {P: 1}, {N: 1, P: 1}},
	"pack":    perfmodel.Linear(),
}

// program composes the region models into the solver's model:
//
//	T(N, p) = 2·T_scatter(N, p) + T_unpack(x) + I·T_iter(x, p) + T_pack(x)
//
// with x = N·⌈N/(p−1)⌉ the points of the largest block: the scatter of
// the blocks, the largest worker's unpacking, I iterations, its packing,
// and the gather of the blocks, which moves the same bytes as the scatter.
func program(set *perfmodel.Set, iters int) (*perfmodel.Program, error) {
	m := map[string]*perfmodel.Model{}
	for _, name := range regionNames {
		r, err := set.Get(name)
		if err != nil {
			return nil, err
		}
		m[name] = r
	}
	points := func(n, p float64) (float64, float64) { return n * math.Ceil(n/(p-1)), p }
	return &perfmodel.Program{Parts: []perfmodel.Part{
		{Name: "scatter+gather", Model: m["scatter"], Count: func(float64, float64) float64 { return 2 }},
		{Name: "unpack", Model: m["unpack"], Arg: points},
		{Name: "iterations", Model: m["iter"], Arg: points,
			Count: func(float64, float64) float64 { return float64(iters) }},
		{Name: "pack", Model: m["pack"], Arg: points},
	}}, nil
}

// sampleRule drops only samples far out (a process descheduled for
// long): the workers run under CPU quotas, whose throttling makes a short
// region's samples bimodal (a stall or none), and the stalls are part of
// what the region costs on a throttled worker, not anomalies to drop. The
// default 3·MAD rule took them for anomalies, and the fits in relative
// residuals, which weigh the shortest samples most, followed the
// unthrottled ones: every prediction came out low.
var sampleRule = perfmodel.Rule{K: 10}

// analyzeRuns fits the region models on the runs fitList names and
// predicts the others: "3,4" fits the runs with those process counts,
// "n<=512" the runs whose plates are all at most 512 points wide (of
// every process count).
func analyzeRuns(in, out, fitList string) error {
	fitN := 0
	fitP := map[int]bool{}
	if v, ok := strings.CutPrefix(fitList, "n<="); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("bad -fit %q", fitList)
		}
		fitN = n
	} else {
		for _, f := range strings.Split(fitList, ",") {
			p, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("bad -fit %q", fitList)
			}
			fitP[p] = true
		}
	}
	runs, err := loadRuns(in, fitN)
	if err != nil {
		return err
	}
	fitted := func(r Samples) bool { return r.Fit || fitP[r.P] }
	iters := runs[0].Iters
	// Region models from the fit runs only.
	regionSamples := map[string][]perfmodel.Sample{}
	for _, r := range runs {
		if r.Iters != iters {
			return fmt.Errorf("runs with %d and %d iterations", iters, r.Iters)
		}
		if !fitted(r) {
			continue
		}
		for _, name := range regionNames {
			for _, s := range r.Regions[name] {
				if len(regionForms[name]) == 2 {
					s.P = 0 // a model in the size alone
				}
				regionSamples[name] = append(regionSamples[name], s)
			}
		}
	}
	set := &perfmodel.Set{Observations: map[string][]perfmodel.Observation{}}
	var b strings.Builder
	fitDesc := "p = " + fitList
	if fitN > 0 {
		fitDesc = fmt.Sprintf("plates N ≤ %d (every process count)", fitN)
	}
	fmt.Fprintf(&b, "Region models, fitted on the runs with %s (samples beyond %g·1.4826·MAD of their configuration's median dropped):\n\n", fitDesc, sampleRule.K)
	for _, name := range regionNames {
		obs := perfmodel.Summarize(regionSamples[name], sampleRule)
		m, err := perfmodel.Fit(regionForms[name], obs, perfmodel.Absolute)
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
		fmt.Fprintf(&b, "    %v; %d samples kept, %d dropped\n", m, kept, dropped)
	}
	pg, err := program(set, iters)
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nProgram model: T(N,p) = 2·T_scatter(N,p) + T_unpack(x) + %d·T_iter(x,p) + T_pack(x), x = N·⌈N/(p−1)⌉\n\n", iters)

	// The Table 1 analogue: every (N, p) run not used in the fit. The
	// measured time is the median of the solves, with their range and
	// mean: a throttled solve's time is skewed (a stall or none), and the
	// range tells the machine's noise from the model's error. Beside it,
	// the machine's load during those solves and the share of a CPU the
	// workers got over their iterations (their CPU time over their wall
	// time): the quota allows 25%, a loaded machine gives less, and a
	// configuration that got less than the fit runs of its process count
	// runs longer than a model of the program fitted on them tells.
	const header = "| N | p | estimated (s) | ± SE | measured: median (s) | [lowest–highest] | mean (solves) | error vs median | load | CPU share |\n|---|---|---|---|---|---|---|---|---|---|\n"
	b.WriteString(header)
	worst, count := 0.0, 0
	var fitRows, regionRows strings.Builder
	est := map[int]perfmodel.Series{}
	meas := map[int]perfmodel.Series{}
	for _, r := range runs {
		for _, o := range perfmodel.Summarize(r.Regions["total"], sampleRule) {
			e := pg.Predict(o.N, o.P)
			med, lo, hi := solveSpread(r.Regions["total"], o.N, o.P)
			errPct := 100 * (e.T - med) / med
			line := fmt.Sprintf("| %.0f | %.0f | %.3f | %.3f | %.3f | [%.3f–%.3f] | %.3f (%d) | %+.2f%% | %.1f | %.1f%% |\n",
				o.N, o.P, e.T, e.SE, med, lo, hi, o.T, o.Kept, errPct, median(r.Load[int(o.N)]), 100*cpuShare(r.Regions, o.N, o.P))
			if fitted(r) {
				fitRows.WriteString(line)
				continue
			}
			b.WriteString(line)
			worst = math.Max(worst, math.Abs(errPct))
			count++
			s, m := est[r.P], meas[r.P]
			s.Name, m.Name, m.Points = fmt.Sprintf("p=%d model", r.P), fmt.Sprintf("p=%d measured", r.P), true
			s.X, s.Y = append(s.X, o.N), append(s.Y, e.T)
			m.X, m.Y = append(m.X, o.N), append(m.Y, med)
			est[r.P], meas[r.P] = s, m
			// Which region misses: each region's model against the median
			// of its samples in this configuration (per iteration for the
			// iterations).
			fmt.Fprintf(&regionRows, "| %.0f | %.0f |", o.N, o.P)
			for _, name := range regionNames {
				rn, rp := o.N, o.P
				if name != "scatter" {
					rn = o.N * math.Ceil(o.N/(o.P-1))
				}
				var ts []float64
				for _, smp := range r.Regions[name] {
					if smp.P == o.P && (smp.N == rn || name == "scatter" && smp.N == o.N) {
						ts = append(ts, smp.T)
					}
				}
				if len(regionForms[name]) == 2 {
					rp = 0
				}
				pred := set.Models[name].Predict(rn, rp).T
				m := median(ts)
				fmt.Fprintf(&regionRows, " %.4g / %.4g (%+.0f%%) |", pred, m, 100*(pred-m)/m)
			}
			regionRows.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "\nWorst absolute error over the %d configurations not fitted: %.2f%%.\n", count, worst)
	fmt.Fprintf(&b, "\nEach region's model against the median of its samples (seconds, the largest block's worker; the iterations per iteration), in the configurations not fitted:\n\n| N | p | %s |\n|---|---|%s\n%s", strings.Join(regionNames, " | "), strings.Repeat("---|", len(regionNames)), regionRows.String())
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
	var series []perfmodel.Series
	for _, r := range runs {
		if s, ok := meas[r.P]; ok {
			series = append(series, s, est[r.P])
		}
	}
	return perfmodel.Plot(filepath.Join(out, "table1.svg"), "Heat: predicted and measured run time", "N", "seconds", series...)
}

// cpuShare is the share of a CPU the workers of configuration (n, p) got
// over their iterations: the median of their CPU time per iteration over
// the median of their wall time per iteration (NaN without CPU samples).
func cpuShare(regs map[string][]perfmodel.Sample, n, p float64) float64 {
	var cpu, wall []float64
	for _, s := range regs["cpu"] {
		if s.P == p && s.N > 0 && math.Abs(s.N/n-math.Ceil(n/(p-1))) <= 1 {
			cpu = append(cpu, s.T)
		}
	}
	for _, s := range regs["iter"] {
		if s.P == p && s.N > 0 && math.Abs(s.N/n-math.Ceil(n/(p-1))) <= 1 {
			wall = append(wall, s.T)
		}
	}
	return median(cpu) / median(wall)
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
