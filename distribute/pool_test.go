package distribute

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/perfmodel"
)

func TestShares(t *testing.T) {
	for _, c := range []struct {
		total int
		vrp   []float64
		want  []int
	}{
		{10, []float64{4, 2, 1}, []int{6, 3, 1}},
		{10, nil, []int{4, 3, 3}},
		{7, []float64{1, 1, 1, 1}, []int{2, 2, 2, 1}},
		{5, []float64{1, 0, 1}, []int{2, 2, 1}}, // a bad entry: even
		{0, []float64{3, 1}, []int{0, 0}},
	} {
		if got := Shares(c.total, c.vrp, len(c.want)); !slices.Equal(got, c.want) {
			t.Errorf("Shares(%d, %v) = %v, want %v", c.total, c.vrp, got, c.want)
		}
	}
}

func TestChunkSizes(t *testing.T) {
	plan := &Plan{Strategy: VRPSS, Total: 1000, VRP: []float64{4, 2, 1}, Phases: 4}
	pl := newPool(plan, 3)
	// ul = 1000/(4·7); worker 0 gets ⌈4·ul⌉ = 143 while plenty is left.
	if n := pl.size(0, 1000); n != 143 {
		t.Errorf("VRP-SS first range %d, want 143", n)
	}
	// Near the end, no more than its VRP share of what is left.
	if n := pl.size(2, 14); n != 2 {
		t.Errorf("VRP-SS late range %d, want 2", n)
	}
	// Adapting: measured rates replace a wrong VRP.
	pl = newPool(&Plan{Strategy: VRPSS, Total: 1000, VRP: []float64{1, 1, 1}, Phases: 4, Adapt: true}, 3)
	for i, ms := range []time.Duration{10, 20, 40} {
		pl.complete(i, Range{0, 10}, ms*time.Millisecond)
	}
	if n := pl.size(0, 1000); n != 143 {
		t.Errorf("adapted VRP-SS range %d, want 143 (VRP now [4 2 1])", n)
	}
	pl = newPool(&Plan{Strategy: GSS, Total: 100}, 3)
	if n := pl.size(1, 100); n != 34 {
		t.Errorf("GSS range %d, want 34", n)
	}
	pl = newPool(&Plan{Strategy: SS, Total: 100, Chunk: 5}, 3)
	if n := pl.size(1, 100); n != 5 {
		t.Errorf("SS range %d, want 5", n)
	}
	for _, name := range []string{"ss", "GSS", "Static", "vrp-ss"} {
		if s, err := ParseStrategy(name); err != nil || !equalFold(s.String(), name) {
			t.Errorf("ParseStrategy(%q) = %v, %v", name, s, err)
		}
	}
	if _, err := ParseStrategy("fifo"); err == nil {
		t.Error("unknown strategy parsed")
	}
}

// Workers racing on the pool, some of them failing while holding work,
// collect every unit exactly once under every strategy.
func TestPoolCoversOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, s := range []Strategy{SS, GSS, Static, VRPSS} {
		for trial := range 40 {
			workers := 1 + rng.IntN(6)
			total := rng.IntN(500)
			vrp := make([]float64, workers)
			for i := range vrp {
				vrp[i] = 1 + 7*rng.Float64()
			}
			// Up to workers-1 of them fail at some chunk.
			failAt := make([]int, workers)
			for i := range failAt {
				failAt[i] = -1
				if i > 0 && rng.IntN(3) == 0 {
					failAt[i] = rng.IntN(4)
				}
			}
			pl := newPool(&Plan{Strategy: s, Total: total, VRP: vrp, Chunk: 1 + rng.IntN(4), Adapt: trial%2 == 0}, workers)
			var mu sync.Mutex
			seen := make([]int, total)
			var wg sync.WaitGroup
			for i := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := 0; ; k++ {
						r, ok := pl.take(i)
						if !ok {
							return
						}
						if k == failAt[i] {
							pl.fail(i, r)
							return
						}
						mu.Lock()
						for u := r.Lo; u < r.Hi; u++ {
							seen[u]++
						}
						mu.Unlock()
						pl.complete(i, r, time.Millisecond)
					}
				}()
			}
			wg.Wait()
			for u, c := range seen {
				if c != 1 {
					t.Fatalf("%v trial %d (%d workers, fail %v): unit %d collected %d times", s, trial, workers, failAt, u, c)
				}
			}
			if done, tot := pl.finished(); done != tot {
				t.Fatalf("%v: %d of %d done", s, done, tot)
			}
		}
	}
}

func ExampleShares() {
	fmt.Println(Shares(100, []float64{4, 2, 1}, 3))
	// Output: [57 29 14]
}

func TestPhases(t *testing.T) {
	// A model whose range times are off by sigma of themselves.
	linear := func(a, b, sigma float64) *perfmodel.Model {
		return &perfmodel.Model{Form: perfmodel.Linear(), Coef: []float64{a, b}, Weighting: perfmodel.Relative, Sigma: sigma}
	}
	// Speeds 4:2:1, 1 ms per unit on the slowest: 700 units split by
	// speed take B = 700/(4+2+1) = 100 ms; k = √(ε·B/a).
	for _, c := range []struct {
		a, sigma float64
		most     int
		want     int
	}{
		{0.002, 0.5, 8, 5},  // √(0.5·100/2)
		{0.002, 0.9, 8, 5},  // ε no more than 50%
		{0.002, 0.1, 8, 2},  // √(0.1·100/2) = 2.2
		{0.005, 0, 8, 1},    // ε no less than 5%: √(0.05·100/5)
		{0.050, 0.5, 8, 1},  // round trips dearer than the work
		{0.0001, 0.5, 8, 8}, // the bound
		{0.002, 0.5, 3, 3},  // the bound
		{0, 0.5, 8, 8},      // no cost per round trip found
		{-0.001, 0.5, 8, 8}, // likewise
	} {
		ms := []*perfmodel.Model{linear(c.a, 0.00025, c.sigma/2), linear(c.a/2, 0.0005, c.sigma), linear(c.a, 0.001, c.sigma/3)}
		if got := Phases(ms, 700, c.most); got != c.want {
			t.Errorf("round trip %g s, error %g, at most %d: %d phases, want %d", c.a, c.sigma, c.most, got, c.want)
		}
	}
	// An intercept below zero within its error (2 ms) counts as that error.
	noisy := linear(-0.001, 0.001, 0.5)
	noisy.Cov = [][]float64{{4e-6, 0}, {0, 0}}
	if got := Phases([]*perfmodel.Model{linear(0.001, 0.00025, 0.25), linear(0.0005, 0.0005, 0.5), noisy}, 700, 8); got != 5 {
		t.Errorf("with an intercept of −1 ± 2 ms: %d phases, want 5 (√(0.5·100/2))", got)
	}
	// A slope that is not positive says nothing of the work: the bound.
	if got := Phases([]*perfmodel.Model{linear(0.002, 0.001, 0.1), linear(0.002, -0.001, 0.1)}, 700, 6); got != 6 {
		t.Errorf("with a negative slope: %d phases, want 6", got)
	}
}

// VRP-SS in one phase is the static VRP split: each worker's first range
// is its whole share, whichever asks first, and nothing is left after.
func TestOnePhaseIsStatic(t *testing.T) {
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
		pl := newPool(&Plan{Strategy: VRPSS, Total: 700, VRP: []float64{4, 2, 1}, Phases: 1}, 3)
		got := map[int]int{}
		for _, i := range order {
			r, ok := pl.take(i)
			if !ok {
				t.Fatalf("order %v: worker %d got nothing", order, i)
			}
			got[i] = r.Len()
		}
		if got[0] != 400 || got[1] != 200 || got[2] != 100 {
			t.Errorf("order %v: ranges %v, want 400, 200, 100", order, got)
		}
		for i := range 3 {
			pl.complete(i, Range{}, 0)
		}
		pl.mu.Lock()
		left := pl.total - pl.next
		pl.mu.Unlock()
		if left != 0 {
			t.Errorf("order %v: %d units left after the first ranges", order, left)
		}
	}
}
