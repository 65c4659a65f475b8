package hws

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Counters are the figures of one run under a policy: steals inside and
// between groups, bytes moved between groups, idle time per process and
// the makespan. The zero value is ready to use.
type Counters struct {
	Policy string `json:"policy"`
	// LocalAttempts and LocalSteals count the steal requests sent inside
	// a group, and those that brought back a task.
	LocalAttempts uint64 `json:"local_attempts"`
	LocalSteals   uint64 `json:"local_steals"`
	// WideAttempts and WideSteals are the same between groups.
	WideAttempts uint64 `json:"wide_attempts"`
	WideSteals   uint64 `json:"wide_steals"`
	// WideKept counts the times a victim kept a task another group's
	// master could have had because moving its data would have cost more
	// than its work (Policy.WorthMoving): once per request and task.
	WideKept uint64 `json:"wide_kept,omitempty"`
	// WideDepths are the depths of the tasks that left their group, in
	// the order the victim handed them over (a run's merged counters
	// list them process by process).
	WideDepths []int `json:"wide_depths,omitempty"`
	// WideBytes counts every byte sent between groups (requests, tasks,
	// results); LocalBytes the same inside groups.
	WideBytes  uint64 `json:"wide_bytes"`
	LocalBytes uint64 `json:"local_bytes"`
	// Idle is, per process, the time it had no task to run.
	Idle []time.Duration `json:"idle_ns"`
	// Makespan is the time from the root task's start to its end.
	Makespan time.Duration `json:"makespan_ns"`
}

// Add adds o's counts to c (idle times process by process; the makespan
// is the larger).
func (c *Counters) Add(o *Counters) {
	c.LocalAttempts += o.LocalAttempts
	c.LocalSteals += o.LocalSteals
	c.WideAttempts += o.WideAttempts
	c.WideSteals += o.WideSteals
	c.WideKept += o.WideKept
	c.WideDepths = append(c.WideDepths, o.WideDepths...)
	c.WideBytes += o.WideBytes
	c.LocalBytes += o.LocalBytes
	if len(o.Idle) > len(c.Idle) {
		c.Idle = append(c.Idle, make([]time.Duration, len(o.Idle)-len(c.Idle))...)
	}
	for i, d := range o.Idle {
		c.Idle[i] += d
	}
	c.Makespan = max(c.Makespan, o.Makespan)
}

// MedianIdle is the median of the per-process idle times.
func (c *Counters) MedianIdle() time.Duration {
	if len(c.Idle) == 0 {
		return 0
	}
	s := slices.Clone(c.Idle)
	slices.Sort(s)
	return s[len(s)/2]
}

// Write prints the counters on one line.
func (c *Counters) Write(w io.Writer) error {
	_, err := fmt.Fprintf(w, "policy=%s makespan=%v steals local=%d/%d wide=%d/%d kept=%d bytes local=%d wide=%d idle(median)=%v\n",
		c.Policy, c.Makespan, c.LocalSteals, c.LocalAttempts, c.WideSteals, c.WideAttempts, c.WideKept,
		c.LocalBytes, c.WideBytes, c.MedianIdle())
	return err
}

// Bound is Théorème 1's count of steals between groups under hws, without
// its constant: g·(D + max_i W_i/p_g), for g groups of pg processes, a
// critical path d and a largest block (subtree below the depth limit) of
// work maxBlock. The theorem counts time in steps that each allow one
// steal; d and maxBlock are to be given in that unit (for instance as
// durations divided by the round trip of a steal between groups).
func Bound(g, pg int, d, maxBlock float64) float64 {
	return float64(g) * (d + maxBlock/float64(pg))
}
