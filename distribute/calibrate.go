package distribute

import (
	"context"
	"fmt"
	"sync"

	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/perfmodel"
)

// Calibrate measures each worker on ranges of the given sizes (reps times
// each, all workers at once so that they run as they will in the real
// run), drops anomalies and fits per worker the time of a range of n
// units, T(n) = a + b·n (round trip included). The ranges are taken from
// the start of the work and their results discarded. perfmodel.VRP of the
// models at the run's typical range size gives the VRP.
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
		obs := perfmodel.Summarize(rec.Region(fmt.Sprint(i)).Samples(), perfmodel.Rule{})
		m, err := perfmodel.Fit(perfmodel.Linear(), obs, perfmodel.Relative)
		if err != nil {
			return nil, fmt.Errorf("calibrating worker %d: %w", i, err)
		}
		m.Name = fmt.Sprintf("worker%d", i)
		models[i] = m
	}
	return models, nil
}
