package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pcor-go/pcor/examples/internal/loadavg"
	"github.com/pcor-go/pcor/hws"
	"github.com/pcor-go/pcor/hws/adapt"
	"github.com/pcor-go/pcor/hws/sim"
)

// realRun is one measured run.
type realRun struct {
	rep       *report
	slowBytes uint64 // bytes the gateway forwarded between groups
}

// job is a real run's setting: the case study, its sizes, the number of
// threads each of its threads creates (for the fan-out depth limit), and
// the simulator's model of its task tree (for the limit from Théorème 1).
type job struct {
	app          string
	size, cutoff int
	fanout       int
}

var defaultJobs = []job{{"fib", 39, 22, 2}, {"nqueens", 14, 4, 2}, {"matmul", 256, 32, 8}, {"nqueens-flat", 14, 4, 10}}

// model is the simulator's task tree of the job: the same tasks with the
// same cut-offs, the root at depth 0 (athread's first thread is at depth 1).
func (j job) model() (*sim.DAG, error) {
	switch j.app {
	case "fib":
		return sim.Fib(j.size, j.cutoff+1) // the worker's fib(n) is sequential for n <= cutoff
	case "nqueens":
		return sim.NQueensSplit(j.size, j.cutoff)
	case "nqueens-flat":
		return sim.NQueens(j.size, j.cutoff)
	case "matmul":
		return sim.MatMul(j.size, j.cutoff)
	}
	return nil, fmt.Errorf("no model of %q", j.app)
}

// Depth-limit rules of the real runs (-limit).
const (
	// limitBest: the limit of sim.DAG.BestLimit on the job's model, which
	// minimises the two terms of Théorème 1's makespan the limit trades.
	// On two groups of three it is deeper than limitFanout's (fib 11
	// against 8, nqueens 12 against 8, nqueens-flat 5 against 3): more,
	// smaller global tasks, and measured 2 to 2.5 times the steals between
	// groups at the end of a run, with no makespan gain that the noise
	// let us see.
	limitBest = "best"
	// limitFanout: hws.DepthLimitFor the job's fan-out (about 128 blocks
	// per group).
	limitFanout = "fanout"
	// limitCost: hws.DepthLimitForCost, from a calibration run in the
	// same topology before the runs (the round trip of a message between
	// two processes of a group while the others compute, and the job's
	// sequential time), the default: the fan-out rule's limit, made
	// shallower until moving the blocks costs at most a twentieth of the
	// work.
	limitCost = "cost"
)

// forJob gives hws its depth limit for the job on groups of per
// processes, unless set, by the rule named (limitCost: with what the
// calibration cal measured).
func forJob(p hws.Policy, j job, groups, per int, rule string, cal *calibration) (hws.Policy, error) {
	if p.Kind != hws.HWS || p.DepthLimit != 0 || groups <= 1 {
		return p, nil
	}
	switch rule {
	case limitFanout:
		p.DepthLimit = hws.DepthLimitFor(groups, j.fanout)
	case limitCost:
		if cal == nil {
			return p, fmt.Errorf("depth-limit rule %s for %s without a calibration", limitCost, j.app)
		}
		p.DepthLimit = hws.DepthLimitForCost(groups, j.fanout, cal.Work, cal.perTask())
	case limitBest:
		d, err := j.model()
		if err != nil {
			return p, err
		}
		p.DepthLimit = d.BestLimit(groups, per) + 1
	default:
		return p, fmt.Errorf("unknown depth-limit rule %q (want %s, %s or %s)", rule, limitCost, limitBest, limitFanout)
	}
	return p, nil
}

// deepest is the depth of the deepest thread any of the policies lets
// leave its process: the worker gives it to every policy (-maxdepth), so
// that all of them may move the same threads and differ only in who asks
// whom for which.
func deepest(policies []hws.Policy) int {
	d := adapt.DefaultMaxDepth
	for _, p := range policies {
		d = max(d, adapt.Deepest(p, nil, 0))
	}
	return d
}

// runReal starts the worker under pcorrun in the topology's namespaces and
// returns process 0's report and the bytes that crossed the slow link.
func runReal(ctx context.Context, tp *topology, pcorrun, self string, j job, pol hws.Policy, extra ...string) (*realRun, error) {
	before, err := tp.wideBytes()
	if err != nil {
		return nil, err
	}
	out, err := runWorkers(ctx, tp, pcorrun, self, j, pol, extra...)
	if err != nil {
		return nil, fmt.Errorf("%s under %v: %v\n%s", j.app, pol, err, out)
	}
	after, err := tp.wideBytes()
	if err != nil {
		return nil, err
	}
	rep, err := parseReport(string(out))
	if err != nil {
		return nil, err
	}
	return &realRun{rep: rep, slowBytes: after - before}, nil
}

// runWorkers runs the worker under pcorrun in the topology's namespaces
// and returns its output.
func runWorkers(ctx context.Context, tp *topology, pcorrun, self string, j job, pol hws.Policy, extra ...string) ([]byte, error) {
	args := []string{"netns", "exec", tp.procs[0], pcorrun, "-n", fmt.Sprint(len(tp.procs)),
		"--hosts", strings.Join(tp.procs, ","), "--via", "ip netns exec {host}", "--listen", tp.ips[0] + ":0",
		self, "worker", "-app", j.app, "-size", fmt.Sprint(j.size), "-cutoff", fmt.Sprint(j.cutoff), "-policy", pol.String()}
	args = append(args, extra...)
	return exec.CommandContext(ctx, "ip", args...).CombinedOutput()
}

// runCalibration measures, in the topology, what limitCost needs for job
// j (worker -calibrate), once more if the first attempt fails.
func runCalibration(ctx context.Context, tp *topology, pcorrun, self string, j job) (*calibration, error) {
	var err error
	for range 2 {
		var out []byte
		if out, err = runWorkers(ctx, tp, pcorrun, self, j, hws.Policy{}, "-calibrate"); err != nil {
			err = fmt.Errorf("calibration of %s: %v\n%s", j.app, err, out)
			continue
		}
		c, err := parseCalibration(string(out))
		return &c, err
	}
	return nil, err
}

// startupFailure reports whether a run failed while its processes
// started (joining the directory, or athread's start-up exchange), before
// the case study ran.
func startupFailure(err error) bool {
	e := err.Error()
	return strings.Contains(e, "athread: start-up with process") || strings.Contains(e, "directory: waiting for")
}

// findPcorrun looks for pcorrun beside this executable, then in PATH.
func findPcorrun() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "pcorrun")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath("pcorrun")
}

// real measures the policies on two groups of processes in network
// namespaces joined by a shaped link, and on a flat network, interleaving
// the policies run by run, and prints medians and spreads.
func real(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hws real", flag.ContinueOnError)
	fs.SetOutput(stderr)
	groups := fs.Int("groups", 2, "groups")
	per := fs.Int("per", 3, "processes per group")
	rate := fs.String("rate", "4mbit", "tc tbf rate of the link between groups")
	reps := fs.Int("reps", 3, "repetitions of every run")
	pols := fs.String("policies", "random,hws", "policies")
	appsFlag := fs.String("apps", "fib,nqueens,matmul", "case studies")
	flat := fs.Bool("flat", true, "measure on one flat network of all the processes too")
	grouped := fs.Bool("grouped", true, "measure on the groups joined by the shaped link")
	pcorrun := fs.String("pcorrun", "", "pcorrun executable (default: beside this one, then PATH)")
	limitRule := fs.String("limit", limitCost, "hws depth limit without hws:L: cost (the fan-out rule's, shallower until moving the blocks costs at most a twentieth of the work, both measured in a calibration run), fanout (about 128 blocks per group) or best (Théorème 1's makespan terms on the job's model task tree); hws:cost, hws:best and hws:fanout in -policies choose per policy")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if why := needNamespaces(); why != "" {
		fmt.Fprintf(stderr, "hws real: %s\n", why)
		return 1
	}
	var err error
	if *pcorrun == "" {
		if *pcorrun, err = findPcorrun(); err != nil {
			fmt.Fprintf(stderr, "hws real: pcorrun not found (go build -o DIR ./cmd/pcorrun ./examples/hws)\n")
			return 1
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var policies []choice
	for _, s := range strings.Split(*pols, ",") {
		c, err := parseChoice(s, *limitRule)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		policies = append(policies, c)
	}
	var jobs []job
	for _, a := range strings.Split(*appsFlag, ",") {
		i := slices.IndexFunc(defaultJobs, func(j job) bool { return j.app == a })
		if i < 0 {
			fmt.Fprintf(stderr, "unknown app %q\n", a)
			return 2
		}
		jobs = append(jobs, defaultJobs[i])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	type setting struct {
		name        string
		groups, per int
		rate        string
	}
	var settings []setting
	if *grouped {
		settings = append(settings, setting{fmt.Sprintf("%d groups of %d, %s between", *groups, *per, *rate), *groups, *per, *rate})
	}
	if *flat {
		settings = append(settings, setting{fmt.Sprintf("flat: one network of %d", *groups**per), 1, *groups * *per, ""})
	}
	for _, st := range settings {
		tp, err := newTopology("hwsr", st.groups, st.per, st.rate)
		if err != nil {
			fmt.Fprintf(stderr, "hws real: %v\n", err)
			return 1
		}
		res := map[string][]*realRun{}
		cals := map[string]*calibration{}
		if st.groups > 1 && slices.ContainsFunc(policies, func(c choice) bool {
			return c.pol.Kind == hws.HWS && c.pol.DepthLimit == 0 && c.rule == limitCost
		}) {
			for _, j := range jobs {
				c, err := runCalibration(ctx, tp, *pcorrun, self, j)
				if err != nil {
					tp.Close()
					fmt.Fprintf(stderr, "hws real: %v\n", err)
					return 1
				}
				cals[j.app] = c
				fmt.Fprintf(stdout, "%s: calibration of %s: round trip %v, work %v; depth limit %d by cost (fan-out rule %d), load %s\n", st.name, j.app,
					c.RoundTrip.Round(time.Microsecond), c.Work.Round(time.Millisecond),
					hws.DepthLimitForCost(st.groups, j.fanout, c.Work, c.perTask()), hws.DepthLimitFor(st.groups, j.fanout), loadavg.Field())
			}
		}
		for rep := range *reps {
			for _, j := range jobs {
				pols := make([]hws.Policy, len(policies))
				for i, c := range policies {
					if pols[i], err = forJob(c.pol, j, st.groups, st.per, c.rule, cals[j.app]); err != nil {
						tp.Close()
						fmt.Fprintf(stderr, "hws real: %v\n", err)
						return 2
					}
				}
				md := deepest(pols)
				for i, p := range pols {
					wa := policies[i].workerArgs(md)
					r, err := runReal(ctx, tp, *pcorrun, self, j, p, wa...)
					if err != nil && ctx.Err() == nil {
						// Printed and run once more: on a loaded machine a
						// process can miss its heartbeats at start-up.
						fmt.Fprintf(stderr, "hws real: %v\nhws real: running it again\n", err)
						r, err = runReal(ctx, tp, *pcorrun, self, j, p, wa...)
					}
					if err != nil {
						tp.Close()
						fmt.Fprintf(stderr, "hws real: %v\n", err)
						return 1
					}
					key := resKey(j, i)
					res[key] = append(res[key], r)
					fmt.Fprintf(stderr, "%s rep %d %s %s: %v, wide steals %d/%d (depths %v, kept %d), slow link %d bytes, load %s\n", st.name, rep, j.app, policies[i].name,
						r.rep.Makespan.Round(time.Millisecond), r.rep.Total.WideSteals, r.rep.Total.WideAttempts, r.rep.Total.WideDepths, r.rep.Total.WideKept, r.slowBytes, loadavg.Field())
				}
			}
		}
		tp.Close()
		fmt.Fprintf(stdout, "\n%s (groups found: %s); medians of %d runs, [min, max]\n", st.name, res[resKey(jobs[0], 0)][0].rep.Groups, *reps)
		printReal(stdout, jobs, policies, res)
		printRatios(stdout, jobs, policies, res)
	}
	fmt.Fprintf(stdout, "\nload average at the end: %s\n", loadavg.Field())
	return 0
}

// printRatios compares every policy with the first of the list, run by run
// (the runs of one repetition are interleaved): the median and spread of
// the makespan ratios, and the ratio of the median steals between groups
// and of the median bytes on the slow link (first policy's over this one's:
// how many times fewer).
func printRatios(w io.Writer, jobs []job, policies []choice, res map[string][]*realRun) {
	if len(policies) < 2 {
		return
	}
	fmt.Fprintf(w, "\nagainst %s, run by run: makespan ratio median [min, max]; %s's median steals between groups and slow-link bytes over this one's\n",
		policies[0].name, policies[0].name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "app\tpolicy\tmakespan / base\tfewer steals between groups\tfewer slow-link bytes\t")
	for _, j := range jobs {
		base := res[resKey(j, 0)]
		for i := 1; i < len(policies); i++ {
			runs := res[resKey(j, i)]
			n := min(len(runs), len(base))
			if n == 0 {
				continue
			}
			var ms, bs, rs, bb, rb []float64
			for k := range n {
				ms = append(ms, float64(runs[k].rep.Makespan)/float64(base[k].rep.Makespan))
				bs = append(bs, float64(base[k].rep.Total.WideSteals))
				rs = append(rs, float64(runs[k].rep.Total.WideSteals))
				bb = append(bb, float64(base[k].slowBytes))
				rb = append(rb, float64(runs[k].slowBytes))
			}
			m, lo, hi := median(ms)
			fmt.Fprintf(tw, "%s\t%s\t%.2f [%.2f, %.2f]\t%s\t%s\t\n", j.app, policies[i].name, m, lo, hi, times(bs, rs), times(bb, rb))
		}
	}
	tw.Flush()
}

// times is median(a) / median(b), "inf" when b's is zero and a's not.
func times(a, b []float64) string {
	ma, _, _ := median(a)
	mb, _, _ := median(b)
	switch {
	case mb == 0 && ma == 0:
		return "1 (both 0)"
	case mb == 0:
		return fmt.Sprintf("inf (%.0f against 0)", ma)
	}
	return fmt.Sprintf("%.1f", ma/mb)
}

func median(v []float64) (med, lo, hi float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

// choice is a policy of the -policies list: hws's depth limit comes from
// hws:L, or else from rule; unweighed hws hands global threads to other
// groups without weighing their data against their work (worker -weigh).
type choice struct {
	pol       hws.Policy
	rule      string
	name      string
	unweighed bool
}

// unweighedSuffix, after an hws policy's name, turns the weighing off.
const unweighedSuffix = "-unweighed"

// parseChoice reads a policy name as hws.Parse does, and hws:cost,
// hws:best and hws:fanout, hws with the limit of that rule; rule is the limit rule of
// plain hws. An hws name may end with -unweighed.
func parseChoice(s, rule string) (choice, error) {
	s = strings.TrimSpace(s)
	base, unweighed := strings.CutSuffix(s, unweighedSuffix)
	if unweighed && !strings.HasPrefix(base, "hws") {
		return choice{}, fmt.Errorf("hws real: %q: only hws weighs data against work", s)
	}
	switch base {
	case "hws:" + limitBest, "hws:" + limitFanout, "hws:" + limitCost:
		return choice{pol: hws.Policy{Kind: hws.HWS}, rule: strings.TrimPrefix(base, "hws:"), name: s, unweighed: unweighed}, nil
	}
	p, err := hws.Parse(base)
	if err != nil {
		return choice{}, err
	}
	name := p.String()
	if p.Kind == hws.HWS && p.DepthLimit == 0 {
		name = "hws:" + rule
	}
	if unweighed {
		name += unweighedSuffix
	}
	return choice{pol: p, rule: rule, name: name, unweighed: unweighed}, nil
}

// workerArgs are the worker flags of choice c, beside maxdepth.
func (c choice) workerArgs(maxDepth int) []string {
	a := []string{"-maxdepth", fmt.Sprint(maxDepth)}
	if c.unweighed {
		a = append(a, "-weigh=false")
	}
	return a
}

// resKey names the runs of job j under the i-th policy of the list.
func resKey(j job, i int) string { return fmt.Sprintf("%s\x00%d", j.app, i) }

func printReal(w io.Writer, jobs []job, policies []choice, res map[string][]*realRun) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "app\tpolicy\tmakespan ms\twide steals\twide tried\twide kept\tslow-link KB\tlocal steals\tidle ms (med proc)\t")
	for _, j := range jobs {
		for i, c := range policies {
			runs := res[resKey(j, i)]
			if len(runs) == 0 {
				continue
			}
			p := c.name
			if used := runs[0].rep.Total.Policy; used != c.name && used != c.pol.Kind.String() {
				p += " (" + used + ")" // the limit it came to
			}
			col := func(f func(r *realRun) float64) string {
				v := make([]float64, len(runs))
				for i, r := range runs {
					v[i] = f(r)
				}
				m, lo, hi := median(v)
				return fmt.Sprintf("%.0f [%.0f, %.0f]", m, lo, hi)
			}
			fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", j.app, p,
				col(func(r *realRun) float64 { return float64(r.rep.Makespan) / 1e6 }),
				col(func(r *realRun) float64 { return float64(r.rep.Total.WideSteals) }),
				col(func(r *realRun) float64 { return float64(r.rep.Total.WideAttempts) }),
				col(func(r *realRun) float64 { return float64(r.rep.Total.WideKept) }),
				col(func(r *realRun) float64 { return float64(r.slowBytes) / 1e3 }),
				col(func(r *realRun) float64 { return float64(r.rep.Total.LocalSteals) }),
				col(func(r *realRun) float64 { return float64(r.rep.Total.MedianIdle()) / 1e6 }))
		}
	}
	tw.Flush()
}
