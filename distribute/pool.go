package distribute

import (
	"math"
	"slices"
	"sync"
	"time"
)

// pool is the master's record of the work: what is unassigned, what each
// worker holds, what came back from workers given up, and what is done.
type pool struct {
	strategy Strategy
	chunk    int
	phases   float64
	adapt    bool
	w        []float64 // VRP weights
	rate     []float64 // VRP-SS with Adapt: measured units per second (0: none yet)

	mu       sync.Mutex
	cond     sync.Cond
	total    int
	next     int     // first unit never assigned
	orphans  []Range // returned by workers given up
	reserved []Range // Static: each worker's range not yet taken
	alive    []bool
	inflight int
	done     int
	stopped  bool
}

func newPool(p *Plan, workers int) *pool {
	pl := &pool{strategy: p.Strategy, chunk: max(p.Chunk, 1), total: p.Total, adapt: p.Adapt,
		w: weights(p.VRP, workers), rate: make([]float64, workers), alive: make([]bool, workers)}
	pl.cond.L = &pl.mu
	for i := range pl.alive {
		pl.alive[i] = true
	}
	pl.phases = float64(p.Phases)
	if pl.phases <= 0 {
		pl.phases = 4
	}
	if p.Strategy == Static {
		at := 0
		for _, n := range Shares(p.Total, p.VRP, workers) {
			pl.reserved = append(pl.reserved, Range{at, at + n})
			at += n
		}
		pl.next = p.Total
	}
	return pl
}

// size is the number of units worker i gets when it asks with left units
// unassigned.
func (pl *pool) size(i, left int) int {
	switch pl.strategy {
	case GSS:
		return int(math.Ceil(float64(left) / float64(pl.liveLocked())))
	case VRPSS:
		var sum, live float64
		for j, a := range pl.alive {
			sum += pl.w[j]
			if a {
				live += pl.w[j]
			}
		}
		// No more than its VRP share of the work not yet done: what is
		// left and what the others hold. (Of what is left alone, the
		// workers served after the first in a phase got ever less: in
		// one phase, 4:2:1 took 57%, 12% and 4% of the work, not 57%,
		// 29% and 14%.)
		phase := math.Ceil(float64(pl.total)*pl.w[i]/(pl.phases*sum) - 1e-9)
		share := math.Ceil(float64(left+pl.inflight)*pl.w[i]/live - 1e-9)
		return max(int(min(phase, share)), 1)
	default: // SS; Static hands out only orphans this way
		return pl.chunk
	}
}

func (pl *pool) liveLocked() int {
	n := 0
	for _, a := range pl.alive {
		if a {
			n++
		}
	}
	return max(n, 1)
}

// take returns the next range for worker i, waiting while others hold
// work that may yet come back; false when all work is done or the pool
// was stopped.
func (pl *pool) take(i int) (Range, bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for !pl.stopped && pl.alive[i] {
		var r Range
		left := pl.total - pl.next
		for _, o := range pl.orphans {
			left += o.Len()
		}
		switch {
		case pl.strategy == Static && pl.reserved[i].Len() > 0:
			r, pl.reserved[i] = pl.reserved[i], Range{}
		case len(pl.orphans) > 0:
			o := pl.orphans[0]
			n := o.Len()
			if pl.strategy != Static {
				n = min(n, pl.size(i, left))
			}
			r = Range{o.Lo, o.Lo + n}
			if n == o.Len() {
				pl.orphans = pl.orphans[1:]
			} else {
				pl.orphans[0].Lo += n
			}
		case pl.next < pl.total:
			n := min(pl.size(i, left), pl.total-pl.next)
			r = Range{pl.next, pl.next + n}
			pl.next += n
		case pl.inflight == 0 && !pl.anyReservedLocked():
			return Range{}, false
		default:
			pl.cond.Wait()
			continue
		}
		pl.inflight += r.Len()
		return r, true
	}
	return Range{}, false
}

func (pl *pool) anyReservedLocked() bool {
	for _, r := range pl.reserved {
		if r.Len() > 0 {
			return true
		}
	}
	return false
}

// complete records r, held by worker i for d, as done. With Adapt, the
// worker's measured rate updates the VRP: once every worker has been
// measured, its entry is its rate over the slowest's.
func (pl *pool) complete(i int, r Range, d time.Duration) {
	pl.mu.Lock()
	pl.inflight -= r.Len()
	pl.done += r.Len()
	if pl.adapt && d > 0 && r.Len() > 0 {
		rate := float64(r.Len()) / d.Seconds()
		if pl.rate[i] > 0 {
			rate = (pl.rate[i] + rate) / 2
		}
		pl.rate[i] = rate
		if slow := slices.Min(pl.rate); slow > 0 {
			for j, x := range pl.rate {
				pl.w[j] = x / slow
			}
		}
	}
	pl.cond.Broadcast()
	pl.mu.Unlock()
}

// fail gives worker i up: the range it held, and in Static its share not
// yet taken, go back to the pool.
func (pl *pool) fail(i int, held Range) {
	pl.mu.Lock()
	pl.alive[i] = false
	if held.Len() > 0 {
		pl.inflight -= held.Len()
		pl.orphans = append(pl.orphans, held)
	}
	if pl.strategy == Static && pl.reserved[i].Len() > 0 {
		pl.orphans = append(pl.orphans, pl.reserved[i])
		pl.reserved[i] = Range{}
	}
	pl.cond.Broadcast()
	pl.mu.Unlock()
}

// stop wakes every waiting take with false.
func (pl *pool) stop() {
	pl.mu.Lock()
	pl.stopped = true
	pl.cond.Broadcast()
	pl.mu.Unlock()
}

// finished reports whether every unit was done.
func (pl *pool) finished() (done, total int) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return pl.done, pl.total
}
