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

// loadRuns reads every samples-*.json in dir and merges the runs with the
// same process count.
func loadRuns(dir string) ([]Samples, error) {
	files, err := filepath.Glob(filepath.Join(dir, "samples-*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no samples-*.json in %s", dir)
	}
	byP := map[int]*Samples{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var s Samples
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		m := byP[s.P]
		if m == nil {
			m = &Samples{P: s.P, Iters: s.Iters, Regions: map[string][]perfmodel.Sample{}}
			byP[s.P] = m
		}
		if m.Iters != s.Iters {
			return nil, fmt.Errorf("%s: %d iterations, others %d", f, s.Iters, m.Iters)
		}
		for k, v := range s.Regions {
			m.Regions[k] = append(m.Regions[k], v...)
		}
	}
	var runs []Samples
	for _, s := range byP {
		runs = append(runs, *s)
	}
	slices.SortFunc(runs, func(a, b Samples) int { return a.P - b.P })
	return runs, nil
}

var regionNames = []string{"block", "unpack", "halo", "sweep", "pack"}

// program composes the region models into the solver's model:
//
//	T(N, p) = (p−1)·T_block(m) + T_unpack(x) + I·(T_halo(8N) + T_sweep(x)) + T_pack(x) + (p−1)·T_block(m)
//
// with x = N·⌈N/(p−1)⌉ the points of the largest block and m its bytes:
// the scatter of the p−1 blocks, the largest worker's unpacking, I
// iterations (the halo exchange keeps the workers in step), its packing,
// and the gather of the blocks.
func program(set *perfmodel.Set, iters int) (*perfmodel.Program, error) {
	blk, err := set.Get("block")
	if err != nil {
		return nil, err
	}
	halo, err := set.Get("halo")
	if err != nil {
		return nil, err
	}
	sweep, err := set.Get("sweep")
	if err != nil {
		return nil, err
	}
	unpack, err := set.Get("unpack")
	if err != nil {
		return nil, err
	}
	pack, err := set.Get("pack")
	if err != nil {
		return nil, err
	}
	points := func(n, p float64) (float64, float64) { return n * math.Ceil(n/(p-1)), p }
	blockBytes := func(n, p float64) (float64, float64) { return 24 + 8*n*math.Ceil(n/(p-1)), p }
	workers := func(n, p float64) float64 { return p - 1 }
	return &perfmodel.Program{Parts: []perfmodel.Part{
		{Name: "scatter", Model: blk, Arg: blockBytes, Count: workers},
		{Name: "unpack", Model: unpack, Arg: points},
		{Name: "halo", Model: halo, Arg: func(n, p float64) (float64, float64) { return 8 * n, p },
			Count: func(float64, float64) float64 { return float64(iters) }},
		{Name: "sweep", Model: sweep, Arg: points,
			Count: func(float64, float64) float64 { return float64(iters) }},
		{Name: "pack", Model: pack, Arg: points},
		{Name: "gather", Model: blk, Arg: blockBytes, Count: workers},
	}}, nil
}

func analyzeRuns(in, out, fitList string) error {
	runs, err := loadRuns(in)
	if err != nil {
		return err
	}
	fitP := map[int]bool{}
	for _, f := range strings.Split(fitList, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("bad -fit %q", fitList)
		}
		fitP[p] = true
	}
	iters := runs[0].Iters
	// Region models from the fit runs only.
	regionSamples := map[string][]perfmodel.Sample{}
	for _, r := range runs {
		if r.Iters != iters {
			return fmt.Errorf("runs with %d and %d iterations", iters, r.Iters)
		}
		if !fitP[r.P] {
			continue
		}
		for _, name := range regionNames {
			for _, s := range r.Regions[name] {
				s.P = 0 // the region models are in their size alone
				regionSamples[name] = append(regionSamples[name], s)
			}
		}
	}
	set := &perfmodel.Set{Observations: map[string][]perfmodel.Observation{}}
	var b strings.Builder
	fmt.Fprintf(&b, "Region models, fitted on the runs with p = %s (anomalies dropped by the 3·MAD rule):\n\n", fitList)
	for _, name := range regionNames {
		obs := perfmodel.Summarize(regionSamples[name], perfmodel.Rule{})
		m, err := perfmodel.Fit(perfmodel.Linear(), obs, perfmodel.Relative)
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
	fmt.Fprintf(&b, "\nProgram model: T(N,p) = 2(p−1)·T_block(8x) + T_unpack(x) + %d·(T_halo(8N) + T_sweep(x)) + T_pack(x), x = N·⌈N/(p−1)⌉\n\n", iters)

	// The Table 1 analogue: every (N, p) run not used in the fit.
	fmt.Fprintf(&b, "| N | p | estimated (s) | ± SE | measured (s) | error |\n|---|---|---|---|---|---|\n")
	worst, count := 0.0, 0
	var fitRows strings.Builder
	est := map[int]perfmodel.Series{}
	meas := map[int]perfmodel.Series{}
	for _, r := range runs {
		for _, o := range perfmodel.Summarize(r.Regions["total"], perfmodel.Rule{}) {
			e := pg.Predict(o.N, o.P)
			errPct := 100 * (e.T - o.T) / o.T
			line := fmt.Sprintf("| %.0f | %.0f | %.3f | %.3f | %.3f | %+.2f%% |\n", o.N, o.P, e.T, e.SE, o.T, errPct)
			if fitP[r.P] {
				fitRows.WriteString(line)
				continue
			}
			b.WriteString(line)
			worst = math.Max(worst, math.Abs(errPct))
			count++
			s, m := est[r.P], meas[r.P]
			s.Name, m.Name, m.Points = fmt.Sprintf("p=%d model", r.P), fmt.Sprintf("p=%d measured", r.P), true
			s.X, s.Y = append(s.X, o.N), append(s.Y, e.T)
			m.X, m.Y = append(m.X, o.N), append(m.Y, o.T)
			est[r.P], meas[r.P] = s, m
		}
	}
	fmt.Fprintf(&b, "\nWorst absolute error over the %d configurations not fitted: %.2f%%.\n", count, worst)
	fmt.Fprintf(&b, "\nFor reference, the configurations the region models were fitted on:\n\n| N | p | estimated (s) | ± SE | measured (s) | error |\n|---|---|---|---|---|---|\n%s", fitRows.String())
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
