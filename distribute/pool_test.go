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
	linear := func(a, b float64) *perfmodel.Model {
		return &perfmodel.Model{Form: perfmodel.Linear(), Coef: []float64{a, b}}
	}
	// Speeds 4:2:1, 1 ms per unit on the slowest: 700 units split by
	// speed take B = 700/(4+2+1) = 100 ms. Round trips of 2 ms: k =
	// √(100/4) = 5; of 50 ms: one phase; of 0.1 ms: the bound.
	for _, c := range []struct {
		a    float64
		most int
		want int
	}{{0.002, 8, 5}, {0.050, 8, 1}, {0.0001, 8, 8}, {0.002, 3, 3}, {0, 8, 8}, {-0.001, 8, 8}} {
		ms := []*perfmodel.Model{linear(c.a, 0.00025), linear(c.a/2, 0.0005), linear(c.a, 0.001)}
		if got := Phases(ms, 700, c.most); got != c.want {
			t.Errorf("round trip %g s, at most %d: %d phases, want %d", c.a, c.most, got, c.want)
		}
	}
	// A slope that is not positive says nothing of the work: the bound.
	if got := Phases([]*perfmodel.Model{linear(0.002, 0.001), linear(0.002, -0.001)}, 700, 6); got != 6 {
		t.Errorf("with a negative slope: %d phases, want 6", got)
	}
}
