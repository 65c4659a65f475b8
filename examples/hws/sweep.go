package main

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/pcor-go/pcor/hws"
	"github.com/pcor-go/pcor/hws/sim"
)

var dagNames = []string{"fib", "tree", "unbalanced", "nqueens", "matmul"}

// makeDAG builds the named task tree, each about 50 s of sequential work
// at 1 µs a unit.
func makeDAG(name string) (*sim.DAG, error) {
	switch name {
	case "fib":
		return sim.Fib(36, 18)
	case "tree":
		return sim.Balanced(4, 7, 3000)
	case "unbalanced":
		return sim.Unbalanced(50_000_000, 5000, 1)
	case "nqueens":
		return sim.NQueens(14, 5)
	case "matmul":
		return sim.MatMul(1024, 64)
	}
	return nil, fmt.Errorf("unknown task tree %q (want one of %v)", name, dagNames)
}

type row struct {
	dag    string
	policy hws.Policy
	res    sim.Result
}

// sweep runs every combination, a few at a time, and returns the rows in
// the order of the flags. hws without a depth limit gets the one that
// minimises the terms of Théorème 1 the limit trades (sim.DAG.BestLimit),
// or, with a task overhead, the shallower limit hws.DepthLimitForCost
// gives if it is shallower; every row's bound is for that limit.
func sweep(o *options, progress io.Writer) ([]row, error) {
	type simJob struct {
		i      int
		d      *sim.DAG
		g, pg  int
		policy hws.Policy
	}
	var jobs []simJob
	for _, name := range o.dags {
		d, err := makeDAG(name)
		if err != nil {
			return nil, err
		}
		for _, g := range o.groups {
			for _, pg := range o.per {
				if g*pg > sim.MaxProcs {
					return nil, fmt.Errorf("%d groups of %d is more than %d processes", g, pg, sim.MaxProcs)
				}
				limit := limitFor(d, g, pg, o.platform)
				for _, p := range o.policies {
					if p.Kind == hws.HWS && p.DepthLimit == 0 && g > 1 {
						p.DepthLimit = limit
					}
					if p.Kind != hws.HWS {
						p.DepthLimit = limit // the bound printed beside it
					}
					jobs = append(jobs, simJob{len(jobs), d, g, pg, p})
				}
			}
		}
	}
	rows := make([]row, len(jobs))
	errs := make([]error, len(jobs))
	ch := make(chan simJob)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 4) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				pl := o.platform
				pl.Groups, pl.PerGroup = j.g, j.pg
				r, err := sim.Run(sim.Config{Platform: pl, Policy: j.policy, DAG: j.d, Seed: o.seed})
				rows[j.i], errs[j.i] = row{j.d.Name, j.policy, r}, err
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s %v on %dx%d: %w", jobs[i].d.Name, jobs[i].policy, jobs[i].g, jobs[i].pg, err)
		}
	}
	return rows, nil
}

func table(w io.Writer, o *options, rows []row) error {
	pl := o.platform
	fmt.Fprintf(w, "simulated platform: inside a group %v, %.0f MB/s; between groups %v, %.1f MB/s per group uplink; 1 unit = %v; seed %d\n",
		pl.LocalLatency, pl.LocalBandwidth/1e6, pl.WideLatency, pl.WideBandwidth/1e6, pl.Unit, o.seed)
	fmt.Fprintf(w, "wide = steals between groups (succeeded/attempted); bound = g·(D + max W_i/p_g) in wide round trips (Théorème 1, no constant)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "dag\tg\tp_g\tp\tpolicy\tmakespan\tW/p+D\tratio\twide\tbound\twide/bound\twide KB\tlocal\tidle(med)\t")
	dag := ""
	for _, r := range rows {
		if r.dag != dag && dag != "" {
			fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t\t\t\t\t")
		}
		dag = r.dag
		s := r.res
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%v\t%v\t%v\t%.2f\t%d/%d\t%.0f\t%.2f\t%.0f\t%d/%d\t%v\t\n",
			r.dag, s.Groups, s.PerGroup, s.Groups*s.PerGroup, r.policy,
			s.Makespan.Round(time.Millisecond), s.Ideal.Round(time.Millisecond),
			float64(s.Makespan)/float64(s.Ideal),
			s.WideSteals, s.WideAttempts, s.Bound, float64(s.WideAttempts)/s.Bound, float64(s.WideBytes)/1e3,
			s.LocalSteals, s.LocalAttempts, s.MedianIdle().Round(time.Millisecond))
	}
	return tw.Flush()
}

// limitFor is the hws depth limit of the sweep for d on g groups of pg:
// sim.DAG.BestLimit, made shallower by hws.DepthLimitForCost when moving a
// task costs the platform's TaskOverhead.
func limitFor(d *sim.DAG, g, pg int, pl sim.Platform) int {
	l := d.BestLimit(g, pg)
	if pl.TaskOverhead > 0 && g > 1 {
		l = min(l, hws.DepthLimitForCost(g, d.Fanout(), time.Duration(d.Work())*pl.Unit, pl.TaskOverhead))
	}
	return l
}
