package cluster

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// assigned drains the assignments made so far.
func assigned(jobs []*tileJob) map[int]pcor.ProcID {
	out := map[int]pcor.ProcID{}
	for i, j := range jobs {
		select {
		case p := <-j.assign:
			out[i] = p
		default:
		}
	}
	return out
}

// TestSchedulerChunksFollowVRP: an idle daemon's chunk is its VRP share of
// the waiting tiles over Phases, taken only among the tiles it holds, and
// every tile is assigned once, to one of its holders.
func TestSchedulerChunksFollowVRP(t *testing.T) {
	s := newScheduler([]pcor.ProcID{1, 2, 3, 4}, func(pcor.ProcID) error { return nil })
	// Measured rates: daemon 4 a quarter of the others' speed. Every
	// daemon is busy with a one-tile chunk while the view is queued.
	for p, d := range s.daemons {
		d.rate = 40
		if p == 4 {
			d.rate = 10
		}
		// A one-tile chunk that took what its rate says.
		d.held, d.size, d.since = 1, 1, time.Now().Add(-time.Duration(float64(time.Second)/d.rate))
	}
	var jobs []*tileJob
	for i := range 300 {
		a := pcor.ProcID(i%4 + 1)
		jobs = append(jobs, s.submit([]pcor.ProcID{a, a%4 + 1}))
	}
	if got := assigned(jobs); len(got) != 0 {
		t.Fatalf("tiles assigned to busy daemons: %v", got)
	}
	want := map[pcor.ProcID]int{}
	for _, p := range []pcor.ProcID{4, 1, 2, 3} {
		left := len(s.pending)
		s.delivered(p) // its chunk is done: its rate measured again
		var sum float64
		for _, d := range s.daemons {
			sum += d.rate
		}
		w := s.daemons[p].rate
		want[p] = int(math.Ceil(float64(left)*w/(Phases*sum) - 1e-9))
		got := assigned(jobs)
		n := 0
		for i, q := range got {
			if q != p || !slices.Contains(jobs[i].holders, p) {
				t.Fatalf("tile %d (holders %v) assigned to %d, the daemon freed was %d", i, jobs[i].holders, q, p)
			}
			n++
			jobs[i] = &tileJob{assign: make(chan pcor.ProcID, 1)} // taken
		}
		if n != want[p] {
			t.Errorf("daemon %d (rate %.1f of %.1f, %d tiles waiting): chunk of %d, want %d", p, w, sum, left, n, want[p])
		}
	}
	if want[4] >= want[1]/2 {
		t.Errorf("slow daemon's chunk %d not well under the fast ones' %d", want[4], want[1])
	}
	// Drain: every remaining tile goes out exactly once as chunks finish.
	seen := 0
	for range 1000 {
		if len(s.pending) == 0 {
			break
		}
		for _, p := range s.order {
			for s.daemons[p].held > 0 {
				s.delivered(p)
			}
		}
		seen += len(assigned(jobs))
	}
	if len(s.pending) != 0 || seen+want[1]+want[2]+want[3]+want[4] != 300 {
		t.Errorf("%d tiles left waiting, %d assigned after the first chunks (+%v)", len(s.pending), seen, want)
	}
}

// TestSchedulerSkipsDownDaemons: a down daemon gets no tiles; a tile
// whose every holder is down is assigned noDaemon at once; a cancelled
// tile still waiting is withdrawn and never assigned.
func TestSchedulerSkipsDownDaemons(t *testing.T) {
	down := map[pcor.ProcID]bool{2: true}
	s := newScheduler([]pcor.ProcID{1, 2, 3}, func(p pcor.ProcID) error {
		if down[p] {
			return errors.New("down")
		}
		return nil
	})
	s.daemons[1].held, s.daemons[3].held = 1, 1 // busy
	both := s.submit([]pcor.ProcID{2, 1})
	only2 := s.submit([]pcor.ProcID{2})
	gone := s.submit([]pcor.ProcID{3})
	if p := <-only2.assign; p != noDaemon {
		t.Errorf("tile held only by a down daemon assigned %d", p)
	}
	if !s.withdraw(gone) || s.withdraw(gone) {
		t.Error("a waiting tile is withdrawn once")
	}
	s.delivered(3)
	s.delivered(1)
	if p := <-both.assign; p != 1 {
		t.Errorf("tile held by down 2 and live 1 assigned %d", p)
	}
	if got := assigned([]*tileJob{gone}); len(got) != 0 {
		t.Errorf("withdrawn tile assigned %v", got)
	}
	if s.daemons[2].held != 0 {
		t.Errorf("down daemon holds %d tiles", s.daemons[2].held)
	}
}
