package distribute

import "github.com/pcor-go/pcor/perfmodel"

// vrpOf is the VRP of per-worker models of the time of n units.
func vrpOf(models []*perfmodel.Model, n int) []float64 {
	return perfmodel.VRP(models, float64(n), 0)
}
