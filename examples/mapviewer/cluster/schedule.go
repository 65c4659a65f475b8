package cluster

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// Strategy says how the loader shares the tiles of a view among the
// daemons holding them.
type Strategy int

const (
	// VRPSS hands the tiles out as PEMPIs-Het's VRP-SS does: in phases of
	// self-scheduling, a daemon getting its next chunk of waiting tiles
	// (among those it holds) when it has delivered the last, each chunk
	// sized by the daemon's relative performance (VRP), which the loader
	// measures as it goes (tiles delivered per second of each chunk). A
	// slow daemon gets small chunks and the others take over the tiles it
	// shares with them, so it no longer sets the pace of a view.
	VRPSS Strategy = iota
	// Primary sends every tile at once to the first live daemon holding
	// it: the tile set's hashing, an even split whatever the daemons'
	// speeds.
	Primary
)

func (s Strategy) String() string {
	switch s {
	case VRPSS:
		return "VRP-SS"
	case Primary:
		return "primary"
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// ParseStrategy parses "vrp-ss" or "primary".
func ParseStrategy(s string) (Strategy, error) {
	switch s {
	case "vrp-ss", "VRP-SS", "vrpss":
		return VRPSS, nil
	case "primary", "hash":
		return Primary, nil
	}
	return 0, fmt.Errorf("cluster: unknown strategy %q (vrp-ss or primary)", s)
}

// Phases is how many phases VRP-SS hands a view out in: a daemon's chunk
// is at most 1/Phases of its VRP share of the tiles waiting.
const Phases = 4

// noDaemon is what a tile none of whose holders is live is assigned: its
// load then fails with each holder's reason.
const noDaemon pcor.ProcID = ViewerProc

// tileJob is a tile of a view waiting for a daemon.
type tileJob struct {
	holders []pcor.ProcID // the daemons holding it, primary first
	assign  chan pcor.ProcID
}

// daemonLoad is what the scheduler knows of one daemon.
type daemonLoad struct {
	held  int       // tiles of its chunk not yet delivered
	size  int       // tiles in its chunk
	since time.Time // when the chunk went out
	rate  float64   // measured tiles per second (0: not yet)
}

// scheduler is the VRP-SS dispatcher of a loader.
type scheduler struct {
	isDown func(pcor.ProcID) error

	mu      sync.Mutex
	pending []*tileJob
	daemons map[pcor.ProcID]*daemonLoad
	order   []pcor.ProcID // daemons in process order
}

func newScheduler(procs []pcor.ProcID, isDown func(pcor.ProcID) error) *scheduler {
	s := &scheduler{isDown: isDown, daemons: map[pcor.ProcID]*daemonLoad{}}
	for _, p := range procs {
		if s.daemons[p] == nil {
			s.daemons[p] = &daemonLoad{}
			s.order = append(s.order, p)
		}
	}
	slices.Sort(s.order)
	return s
}

// submit queues a tile held by holders; its daemon comes on the job's
// assign channel.
func (s *scheduler) submit(holders []pcor.ProcID) *tileJob {
	j := &tileJob{holders: holders, assign: make(chan pcor.ProcID, 1)}
	s.mu.Lock()
	s.pending = append(s.pending, j)
	s.dispatchLocked()
	s.mu.Unlock()
	return j
}

// withdraw takes j back if it still waits (its view was cancelled); false
// when a daemon was already assigned (on j.assign).
func (s *scheduler) withdraw(j *tileJob) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.pending, j); i >= 0 {
		s.pending = slices.Delete(s.pending, i, i+1)
		return true
	}
	return false
}

// delivered records that daemon p is done with one tile of its chunk; the
// last one measures the daemon's rate and gets it its next chunk.
func (s *scheduler) delivered(p pcor.ProcID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.daemons[p]
	if d == nil || d.held == 0 {
		return
	}
	d.held--
	if d.held > 0 {
		return
	}
	if took := time.Since(d.since).Seconds(); took > 0 {
		r := float64(d.size) / took
		if d.rate > 0 {
			r = (d.rate + r) / 2
		}
		d.rate = r
	}
	s.dispatchLocked()
}

// kick hands out waiting tiles again (a daemon went down or came back).
func (s *scheduler) kick() {
	s.mu.Lock()
	s.dispatchLocked()
	s.mu.Unlock()
}

// vrpLocked is each live daemon's weight: its measured rate, or the
// fastest measured one's while it has none (1 when none is measured).
func (s *scheduler) vrpLocked(live []pcor.ProcID) map[pcor.ProcID]float64 {
	top := 0.0
	for _, p := range live {
		top = math.Max(top, s.daemons[p].rate)
	}
	if top == 0 {
		top = 1
	}
	w := make(map[pcor.ProcID]float64, len(live))
	for _, p := range live {
		w[p] = s.daemons[p].rate
		if w[p] == 0 {
			w[p] = top
		}
	}
	return w
}

// dispatchLocked gives every idle live daemon its next chunk: of the R
// tiles waiting, ⌈R·VRP_i/(Phases·ΣVRP)⌉ (at least one) among those it
// holds, oldest first. A tile none of whose holders is live is assigned
// noDaemon.
func (s *scheduler) dispatchLocked() {
	if len(s.pending) == 0 {
		return
	}
	var live []pcor.ProcID
	for _, p := range s.order {
		if s.isDown(p) == nil {
			live = append(live, p)
		}
	}
	isLive := func(p pcor.ProcID) bool { return slices.Contains(live, p) }
	keep := s.pending[:0]
	for _, j := range s.pending {
		if !slices.ContainsFunc(j.holders, isLive) {
			j.assign <- noDaemon
			continue
		}
		keep = append(keep, j)
	}
	clear(s.pending[len(keep):])
	s.pending = keep
	w := s.vrpLocked(live)
	var sum float64
	for _, x := range w {
		sum += x
	}
	for _, p := range live {
		d := s.daemons[p]
		if d.held > 0 || len(s.pending) == 0 {
			continue
		}
		n := max(1, int(math.Ceil(float64(len(s.pending))*w[p]/(Phases*sum)-1e-9)))
		keep := s.pending[:0]
		got := 0
		for _, j := range s.pending {
			if got < n && slices.Contains(j.holders, p) {
				j.assign <- p
				got++
				continue
			}
			keep = append(keep, j)
		}
		clear(s.pending[len(keep):])
		s.pending = keep
		if got > 0 {
			d.held, d.size, d.since = got, got, time.Now()
		}
	}
}

// rates reports each daemon's measured rate (tiles per second; 0: not
// measured yet).
func (s *scheduler) rates() map[pcor.ProcID]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[pcor.ProcID]float64, len(s.daemons))
	for p, d := range s.daemons {
		out[p] = d.rate
	}
	return out
}
