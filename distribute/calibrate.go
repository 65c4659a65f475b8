package distribute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/perfmodel"
)

// Calibrate measures each worker on ranges of the given sizes (reps times
// each, all workers at once so that they run as they will in the real
// run), drops anomalies and fits per worker the time of a range of n
// units, T(n) = a + b·n (round trip included), through every range kept:
// the model's residual spread (Sigma, relative) is then how far one
// range's time strays from the line, which is what a phase of VRP-SS ends
// uneven by (Phases), where a fit through the means of each size's ranges
// saw only how far the means stray (with three sizes, one degree of
// freedom: at n = 384-896 of the matrix product it put ε at its 5% floor
// and VRP-SS in one phase, a static split, while one range's time strayed
// 10-30% at load 2-3). The ranges are taken from the start of the work
// and their results discarded. perfmodel.VRP of the models at the run's
// typical range size gives the VRP.
func Calibrate(ctx context.Context, node *pcor.Node, workers []pcor.Addr, sizes []int, reps int, input func(Range) []byte) ([]*perfmodel.Model, error) {
	if len(sizes) < 2 {
		return nil, fmt.Errorf("distribute: calibration needs two sizes or more")
	}
	var rec perfmodel.Recorder
	plan := &Plan{Input: input}
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, addr := range workers {
		th := node.NewThread()
		reg := rec.Region(fmt.Sprint(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range max(reps, 1) {
				for _, s := range sizes {
					t0 := reg.Start()
					if _, err := roundTrip(ctx, th, addr, Range{0, s}, plan, i, nil); err != nil {
						errs[i] = fmt.Errorf("calibrating worker %d: %w", i, err)
						return
					}
					reg.Stop(t0, float64(s), 0)
				}
			}
		}()
	}
	wg.Wait()
	models := make([]*perfmodel.Model, len(workers))
	for i := range workers {
		if errs[i] != nil {
			return nil, errs[i]
		}
		m, err := perfmodel.Fit(perfmodel.Linear(), perfmodel.Kept(rec.Region(fmt.Sprint(i)).Samples(), perfmodel.Rule{}), perfmodel.Relative)
		if err != nil {
			return nil, fmt.Errorf("calibrating worker %d: %w", i, err)
		}
		m.Name = fmt.Sprintf("worker%d", i)
		models[i] = m
	}
	return models, nil
}

// Scale returns the range size to calibrate with: the first of c, 2c, 4c,
// … (no more than most) whose range takes at least least on every worker,
// each size timed once on all workers at once. A worker held to a CPU
// quota runs at full speed until its quota for the period is spent, so a
// range that ends within one period's quota hides the quota: calibrated on
// such ranges, a worker at a quarter of a CPU looks as fast as a whole one.
func Scale(ctx context.Context, node *pcor.Node, workers []pcor.Addr, c, most int, least time.Duration, input func(Range) []byte) (int, error) {
	c = max(c, 1)
	plan := &Plan{Input: input}
	for ; ; c *= 2 {
		if c >= most {
			return max(most, 1), nil
		}
		took := make([]time.Duration, len(workers))
		errs := make([]error, len(workers))
		var wg sync.WaitGroup
		for i, addr := range workers {
			th := node.NewThread()
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				if _, err := roundTrip(ctx, th, addr, Range{0, c}, plan, i, nil); err != nil {
					errs[i] = fmt.Errorf("scaling worker %d: %w", i, err)
				}
				took[i] = time.Since(t0)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, err
		}
		if slices.Min(took) >= least {
			return c, nil
		}
	}
}
