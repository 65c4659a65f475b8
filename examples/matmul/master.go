package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pcor-go/pcor/distribute"
	"github.com/pcor-go/pcor/examples/internal/loadavg"
	"github.com/pcor-go/pcor/internal/cpuquota"
	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/perfmodel"
	"github.com/pcor-go/pcor/perfmodel/perfplot"
)

// variant is one way of running the multiplication.
type variant struct {
	name     string
	strategy distribute.Strategy
	useVRP   bool
}

// maxPhases bounds VRP-SS's phases (distribute.Phases): where the
// calibration finds no cost per round trip (an intercept at or below zero,
// within its noise) VRP-SS goes out in this many.
const maxPhases = 4

var variants = []variant{
	{"SS", distribute.SS, false},
	{"GSS", distribute.GSS, false},
	{"even", distribute.Static, false},
	{"VRP", distribute.Static, true},
	{"VRP-SS", distribute.VRPSS, true},
}

type master struct {
	node    *pcor.Node
	th      *pcor.Thread
	workers []pcor.Addr
}

func (m *master) setup(ctx context.Context, n int, b []float64) error {
	msg := encodeSetup(n, b)
	for _, w := range m.workers {
		if err := m.th.Send(ctx, w, TagSetup, msg); err != nil {
			return fmt.Errorf("setup of worker %v: %w", w, err)
		}
	}
	return nil
}

func (m *master) stopWorkers(ctx context.Context) {
	m.setup(ctx, 0, nil)
}

// rowsInput returns the input of a range: its rows of a.
func rowsInput(a []float64, n int) func(distribute.Range) []byte {
	return func(r distribute.Range) []byte {
		return appendRow(make([]byte, 0, 8*n*r.Len()), a[r.Lo*n:r.Hi*n])
	}
}

// calibrate fits each worker's time for a range of rows of size n.
func (m *master) calibrate(ctx context.Context, n int, a, b []float64) ([]*perfmodel.Model, error) {
	if err := m.setup(ctx, n, b); err != nil {
		return nil, err
	}
	// Ranges long enough for a worker's CPU quota to show: the quota is
	// accounted over short periods (cpuquota.Period), and a range a
	// throttled worker ends within one period's quota looks as fast as an
	// unthrottled one. The smallest range is grown from n/32 rows until it
	// takes two periods on every worker, or to n/4 rows (the largest,
	// 4c, is then the whole matrix). With n/32 rows at every size the
	// calibration at n = 384 took the worker at 50% of a CPU for faster
	// than the one at 100%.
	c, err := distribute.Scale(ctx, m.node, m.workers, max(1, n/32), max(1, n/4), 2*cpuquota.Period, rowsInput(a, n))
	if err != nil {
		return nil, err
	}
	// A range of one row as well: a phase of VRP-SS costs each worker a
	// round trip (distribute.Phases weighs it against the unevenness it
	// saves), and a line through c to 4c rows alone put that fixed cost
	// far from zero or left it within its error, which Phases then counts
	// as the cost (a few ms at n = 384-640 against a round trip of
	// 0.1-0.5 ms), and sent VRP-SS out in one phase, a static VRP split.
	models, err := distribute.Calibrate(ctx, m.node, m.workers, []int{1, c, 2 * c, 4 * c}, 3, rowsInput(a, n))
	if err != nil {
		return nil, err
	}
	// End the calibration phase.
	if _, err := distribute.Run(ctx, m.node, m.workers, distribute.Plan{}); err != nil {
		return nil, err
	}
	return models, nil
}

// multiply runs one multiplication and returns its time.
func (m *master) multiply(ctx context.Context, v variant, vrp []float64, phases, n int, a, b []float64, rng *rand.Rand) (time.Duration, error) {
	if err := m.setup(ctx, n, b); err != nil {
		return 0, err
	}
	c := make([]float64, n*n)
	plan := distribute.Plan{Strategy: v.strategy, Total: n, Input: rowsInput(a, n),
		Collect: func(_ int, r distribute.Range, out []byte) error {
			if len(out) != 8*n*r.Len() {
				return fmt.Errorf("%d bytes for %d rows", len(out), r.Len())
			}
			decodeRow(out, c[r.Lo*n:r.Hi*n])
			return nil
		}}
	if v.useVRP {
		plan.VRP = vrp
	}
	if v.strategy == distribute.VRPSS {
		plan.Phases, plan.Adapt = phases, true
	}
	rep, err := distribute.Run(ctx, m.node, m.workers, plan)
	if err != nil {
		return 0, err
	}
	if err := check(a, b, c, n, rng); err != nil {
		return 0, fmt.Errorf("%s, n=%d: %w", v.name, n, err)
	}
	return rep.Elapsed, nil
}

func (m *master) experiment(ctx context.Context, ns []int, reps int, out, modelsPath string) error {
	var loaded *perfmodel.Set
	if modelsPath != "" {
		s, err := perfmodel.Load(modelsPath)
		if err != nil {
			return err
		}
		loaded = s
	}
	set := &perfmodel.Set{}
	rng := rand.New(rand.NewPCG(1, 2))
	times := map[string]map[int][]float64{} // variant → n → seconds
	vrps := map[int][]float64{}
	phaseCounts := map[int]int{}
	loads := map[int][]float64{} // n → the load average before each multiplication
	for _, n := range ns {
		a, b := randomMatrix(rng, n), randomMatrix(rng, n)
		var models []*perfmodel.Model
		if loaded != nil {
			for i := range m.workers {
				mdl, err := loaded.Get(calibName(n, i))
				if err != nil {
					return err
				}
				models = append(models, mdl)
			}
		} else {
			var err error
			if models, err = m.calibrate(ctx, n, a, b); err != nil {
				return err
			}
		}
		// VRP-SS's phases from the models (distribute.Phases), and the
		// VRP at the size of a range in one of them, within the sizes
		// calibrated: a line through noisy times can cross zero below
		// them, and a VRP of negative times means nothing.
		phases := distribute.Phases(models, n, maxPhases)
		chunk := float64(n) / float64(phases*len(m.workers))
		chunk = min(max(chunk, models[0].NMin), models[0].NMax)
		vrp := perfmodel.VRP(models, chunk, 0)
		vrps[n] = vrp
		phaseCounts[n] = phases
		for i, mdl := range models {
			set.Put(calibName(n, i), mdl)
		}
		fmt.Printf("n=%d VRP %s, VRP-SS in %d phases\n", n, fmtVRP(vrp), phases)
		for r := range reps {
			for k := range variants {
				v := variants[(k+r)%len(variants)]
				loads[n] = append(loads[n], loadAverage())
				d, err := m.multiply(ctx, v, vrp, phases, n, a, b, rng)
				if err != nil {
					return err
				}
				if times[v.name] == nil {
					times[v.name] = map[int][]float64{}
				}
				times[v.name][n] = append(times[v.name][n], d.Seconds())
				fmt.Printf("n=%d rep %d %-6s %8.1f ms (product verified)\n", n, r, v.name, 1e3*d.Seconds())
			}
		}
	}
	report := table(ns, reps, len(m.workers), times, vrps, phaseCounts, loads)
	fmt.Print(report)
	strategyModels := fitStrategies(ns, times, set)
	fmt.Print(strategyModels)
	if out == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(out, "RESULTS.md"), []byte(report+"\n"+strategyModels), 0o644); err != nil {
		return err
	}
	if err := set.Save(filepath.Join(out, "models.json")); err != nil {
		return err
	}
	return figure(filepath.Join(out, "figure2.svg"), ns, times, set)
}

func calibName(n, worker int) string { return fmt.Sprintf("n%d/worker%d", n, worker+1) }

func fmtVRP(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// loadAverage is the machine's one-minute load average (0 where
// /proc/loadavg cannot be read).
func loadAverage() float64 {
	v, _ := loadavg.Value()
	return v
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// table is the Markdown table of median times (with their spread) and the
// ratios the case study is judged by.
func table(ns []int, reps, workers int, times map[string]map[int][]float64, vrps map[int][]float64, phases map[int]int, loads map[int][]float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Matrix multiplication C = A·B (n×n float64), %d workers, median of %d runs per cell (min–max), ms.\n\n", workers, reps)
	fmt.Fprintf(&b, "| n | VRP (calibrated) | VRP-SS phases |")
	for _, v := range variants {
		fmt.Fprintf(&b, " %s |", v.name)
	}
	fmt.Fprintf(&b, " VRP-SS/SS | VRP-SS/even | VRP-SS/best | load |\n|---|---|---|")
	for range variants {
		b.WriteString("---|")
	}
	b.WriteString("---|---|---|---|\n")
	for _, n := range ns {
		fmt.Fprintf(&b, "| %d | %s | %d |", n, fmtVRP(vrps[n]), phases[n])
		best := 0.0
		for _, v := range variants {
			xs := times[v.name][n]
			med := median(xs)
			if best == 0 || med < best {
				best = med
			}
			fmt.Fprintf(&b, " %.1f (%.1f–%.1f) |", 1e3*med, 1e3*slices.Min(xs), 1e3*slices.Max(xs))
		}
		vs := median(times["VRP-SS"][n])
		fmt.Fprintf(&b, " %.2f | %.2f | %.2f | %.1f–%.1f |\n", vs/median(times["SS"][n]), vs/median(times["even"][n]), vs/best,
			slices.Min(loads[n]), slices.Max(loads[n]))
	}
	return b.String()
}

// fitStrategies fits each strategy's median time as a cubic in n (as
// PEMPIs-Het models them), when there are enough sizes.
func fitStrategies(ns []int, times map[string]map[int][]float64, set *perfmodel.Set) string {
	deg := min(3, len(ns)-2)
	if deg < 1 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nModels of each strategy's time in n (least squares, degree %d, relative residuals):\n\n", deg)
	for _, v := range variants {
		var obs []perfmodel.Observation
		for _, n := range ns {
			obs = append(obs, perfmodel.Observation{N: float64(n), T: median(times[v.name][n])})
		}
		mdl, err := perfmodel.Fit(perfmodel.Poly(deg), obs, perfmodel.Relative)
		if err != nil {
			fmt.Fprintf(&b, "    %s: %v\n", v.name, err)
			continue
		}
		set.Put("strategy/"+v.name, mdl)
		fmt.Fprintf(&b, "    %v\n", mdl)
	}
	return b.String()
}

// figure plots the measured medians and the fitted curves (Figure 2).
func figure(path string, ns []int, times map[string]map[int][]float64, set *perfmodel.Set) error {
	var series []perfplot.Series
	for _, v := range variants {
		s := perfplot.Series{Name: v.name, Points: true}
		for _, n := range ns {
			s.X = append(s.X, float64(n))
			s.Y = append(s.Y, median(times[v.name][n]))
		}
		series = append(series, s)
	}
	for _, v := range variants {
		if mdl, err := set.Get("strategy/" + v.name); err == nil {
			series = append(series, perfplot.Curve(v.name+" model", mdl, 0, float64(ns[0]), float64(ns[len(ns)-1]), 40))
		}
	}
	return perfplot.Plot(path, "Matrix multiplication by strategy (workers at 100/50/25% CPU)", "n", "seconds", series...)
}
