// Command hws compares the between-process stealing policies of package
// hws (random, crs, hws) in the simulator of package hws/sim, on g groups
// of p_g simulated processes joined by slow links, and prints for each run
// the steals between groups beside Théorème 1's bound and the makespan
// beside W/p + D.
//
//	go run ./examples/hws                       # fib(36), 4, 16, 64 groups of 2 to 16
//	go run ./examples/hws -dag all -plot hws.png
//	go run ./examples/hws -groups 8 -per 4,32 -policies random,hws:9 -seed 3
//
// The runs are deterministic: the same flags print the same table.
//
// hws real runs the policies with real processes under pcorrun, the groups
// in network namespaces joined by a shaped link (as root; hws real -h).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pcor-go/pcor/hws"
	"github.com/pcor-go/pcor/hws/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	dags     []string
	groups   []int
	per      []int
	policies []hws.Policy
	seed     uint64
	plot     string
	platform sim.Platform
}

func parse(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("hws", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: hws [flags]         the policies in the simulator (flags below)
       hws real [flags]    the policies on real processes in network namespaces (root; hws real -h)

`)
		fs.PrintDefaults()
	}
	var dags, groups, per, pols string
	o := &options{platform: sim.DefaultPlatform(1, 1)}
	fs.StringVar(&dags, "dag", "fib", "task trees, comma-separated: "+strings.Join(dagNames, ", ")+", or all")
	fs.StringVar(&groups, "groups", "4,16,64", "group counts, comma-separated")
	fs.StringVar(&per, "per", "2,4,8,16", "processes per group, comma-separated")
	fs.StringVar(&pols, "policies", "random,crs,hws", "policies, comma-separated (hws:L sets the depth limit)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed")
	fs.StringVar(&o.plot, "plot", "", "write a plot of steals between groups against processes to this PNG file")
	fs.DurationVar(&o.platform.LocalLatency, "local-latency", o.platform.LocalLatency, "message latency inside a group")
	fs.Float64Var(&o.platform.LocalBandwidth, "local-bw", o.platform.LocalBandwidth, "bandwidth inside a group, bytes/s")
	fs.DurationVar(&o.platform.WideLatency, "wide-latency", o.platform.WideLatency, "message latency between groups")
	fs.Float64Var(&o.platform.WideBandwidth, "wide-bw", o.platform.WideBandwidth, "uplink bandwidth of a group, bytes/s")
	fs.DurationVar(&o.platform.Unit, "unit", o.platform.Unit, "time of one unit of work")
	fs.DurationVar(&o.platform.TaskOverhead, "task-overhead", 0, "cost of moving one task to another process beyond its messages (a runtime's handling); hws's default depth limit then follows hws.DepthLimitForCost too")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if dags == "all" {
		o.dags = dagNames
	} else {
		for _, d := range strings.Split(dags, ",") {
			if _, err := makeDAG(d); err != nil {
				return nil, err
			}
			o.dags = append(o.dags, d)
		}
	}
	var err error
	if o.groups, err = ints(groups); err != nil {
		return nil, fmt.Errorf("-groups: %w", err)
	}
	if o.per, err = ints(per); err != nil {
		return nil, fmt.Errorf("-per: %w", err)
	}
	for _, s := range strings.Split(pols, ",") {
		p, err := hws.Parse(s)
		if err != nil {
			return nil, err
		}
		o.policies = append(o.policies, p)
	}
	return o, nil
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > sim.MaxProcs {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "worker":
			return worker(args[1:], stdout, stderr)
		case "real":
			return real(args[1:], stdout, stderr)
		}
	}
	o, err := parse(args, stderr)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		fmt.Fprintf(stderr, "hws: %v\n", err)
		return 2
	}
	start := time.Now()
	rows, err := sweep(o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "hws: %v\n", err)
		return 1
	}
	if err := table(stdout, o, rows); err != nil {
		fmt.Fprintf(stderr, "hws: %v\n", err)
		return 1
	}
	if o.plot != "" {
		if err := plotSteals(o.plot, rows); err != nil {
			fmt.Fprintf(stderr, "hws: plot: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "plot written to %s\n", o.plot)
	}
	fmt.Fprintf(stderr, "hws: %d runs in %v\n", len(rows), time.Since(start).Round(time.Millisecond))
	return 0
}
