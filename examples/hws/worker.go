package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/hws"
	"github.com/pcor-go/pcor/hws/adapt"
	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/routing"
)

// countersThread is the pcor thread on which the processes send their
// counters to process 0 at the end of a run.
const countersThread pcor.ThreadID = 0x7fff4857

// report is what process 0 prints at the end of a real run, on one line
// after "RESULT ".
type report struct {
	App      string         `json:"app"`
	Result   string         `json:"result"`
	Groups   string         `json:"groups"`
	Total    hws.Counters   `json:"total"`
	PerProc  []hws.Counters `json:"per_proc"`
	Makespan time.Duration  `json:"makespan_ns"`
}

// worker runs one process of a real run (under pcorrun): it joins with a
// port on its group's network and one on the wide-area network, finds the
// groups, runs the case study from process 0 under the chosen policy, and
// gathers every process's counters in process 0.
func worker(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hws worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	appName := fs.String("app", "fib", "case study: fib, nqueens or matmul")
	size := fs.Int("size", 30, "fib's n, the number of queens, or the matrix size")
	cutoff := fs.Int("cutoff", 16, "fib: sequential at or below this n; nqueens: sequential from this row; matmul: leaf block size")
	polName := fs.String("policy", "hws", "policy: random, crs, hws or hws:L")
	wanLatency := fs.Duration("wan-latency", 20*time.Millisecond, "latency announced for the wide-area port")
	wanBandwidth := fs.Float64("wan-bw", 500e3, "bandwidth announced for the wide-area port, bytes/s")
	vps := fs.Int("vps", 1, "VPs per process")
	maxDepth := fs.Int("maxdepth", 0, "deepest thread that may leave its process under random and crs (0: the default); hws: see adapt.New")
	weigh := fs.Bool("weigh", true, "hws: weigh a thread's data against its work (its cost hint, at a rate measured here) before handing it to another group")
	traceFile := fs.String("trace", "", "process 0 writes the athread trace, with the counters, to this file")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	calib := fs.Bool("calibrate", false, "measure instead of running the case study: a message's round trip between processes 0 and 1 with the others busy, and the case study's sequential time; process 0 prints them after CALIBRATE")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	pol, err := hws.Parse(*polName)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	body, ok := apps[*appName]
	if !ok {
		fmt.Fprintf(stderr, "unknown app %q\n", *appName)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := runWorker(ctx, pol, body, *appName, *size, *cutoff, *vps, *maxDepth, *weigh, *calib, *wanLatency, *wanBandwidth, *traceFile, stdout); err != nil {
		fmt.Fprintf(stderr, "hws worker: %v\n", err)
		return 1
	}
	return 0
}

// listenSpec is the PCOR_LISTEN of a process whose first non-loopback IPv4
// address is ip: a port on the network of its /24 and one on the
// wide-area network, whose announced cost makes it the slower link. With
// no such address it is one port on loopback.
func listenSpec(lat time.Duration, bw float64) string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.To4() == nil {
			continue
		}
		ip := n.IP.To4()
		return fmt.Sprintf("%s:0@lan-%d.%d.%d,%s:0@wan;latency=%v;bandwidth=%.0f", ip, ip[0], ip[1], ip[2], ip, lat, bw)
	}
	return "127.0.0.1:0"
}

func runWorker(ctx context.Context, pol hws.Policy, body app, appName string, size, cutoff, vps, maxDepth int, weigh, calib bool,
	wanLat time.Duration, wanBW float64, traceFile string, stdout io.Writer) error {
	if os.Getenv("PCOR_LISTEN") == "" {
		os.Setenv("PCOR_LISTEN", listenSpec(wanLat, wanBW))
	}
	if os.Getenv(pcor.EnvPrices) == "" {
		// The link prices are the announced ones: probes of the links
		// would cross the slow link during the run and be counted in
		// its bytes and its makespan.
		os.Setenv(pcor.EnvPrices, "off")
	}
	rank := 0
	fmt.Sscan(os.Getenv(directory.EnvRank), &rank)
	md := maxDepth
	if pol.Kind == hws.HWS {
		md = 0 // hws goes down to its limit plus half the default
	}
	policy := adapt.New(pol, pcor.ProcID(rank), &hws.Groups{}, md)
	rt, err := athread.FromEnv(ctx, athread.Config{VPs: vps, Policy: policy, Trace: traceFile != ""})
	if err != nil {
		return err
	}
	defer rt.Close()
	node := rt.Node()
	if node == nil {
		return fmt.Errorf("not started by pcorrun")
	}
	lists, err := hws.GroupsFromEnv()
	if err != nil {
		return err
	}
	members := node.Directory().Members()
	var groups *hws.Groups
	if lists != nil {
		if groups, err = hws.Explicit(members, lists); err != nil {
			return err
		}
	} else {
		groups = hws.Discover(members, routing.DefaultModel())
	}
	policy.SetGroups(groups)
	if calib {
		return calibrate(ctx, rt, node, appName, size, cutoff, stdout)
	}
	if rate := rates[appName]; rate != nil && weigh {
		policy.Weigh(rate(), node.Routes)
	}

	var result string
	var makespan time.Duration
	start, cpu0 := time.Now(), cpuTime()
	err = rt.Run(ctx, func(ctx context.Context) error {
		start, cpu0 = time.Now(), cpuTime()
		var err error
		result, err = body(ctx, size, cutoff)
		makespan = time.Since(start)
		return err
	})
	end, cpu1 := time.Now(), cpuTime()
	if err != nil {
		return err
	}
	mine := policy.Counters()
	mine.Idle = []time.Duration{idleTime(rt, start, end, cpu1-cpu0)}
	t := node.Thread(countersThread)
	if rt.Proc() != 0 {
		// Send the counters, then wait for process 0's word that it has
		// them all: leaving earlier could make process 0 count this
		// process as gone, and the other way round.
		b, _ := json.Marshal(mine)
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := t.Send(sctx, pcor.Addr{Proc: 0, Thread: countersThread}, 1, b); err != nil {
			return err
		}
		_, err := t.Recv(sctx, pcor.Addr{Proc: 0, Thread: countersThread}, 2)
		return err
	}
	rep := report{App: appName, Result: result, Groups: groups.String(), Makespan: makespan,
		PerProc: make([]hws.Counters, len(members))}
	rep.PerProc[0] = mine
	for range len(members) - 1 {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := t.Recv(rctx, pcor.Addr{Proc: pcor.AnyProc, Thread: countersThread}, 1)
		cancel()
		if err != nil {
			return fmt.Errorf("counters of the other processes: %w", err)
		}
		var c hws.Counters
		if err := json.Unmarshal(m.Data, &c); err != nil || int(m.Src.Proc) >= len(rep.PerProc) {
			return fmt.Errorf("bad counters from process %d", m.Src.Proc)
		}
		rep.PerProc[m.Src.Proc] = c
	}
	for p := 1; p < len(members); p++ {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		t.Send(sctx, pcor.Addr{Proc: pcor.ProcID(p), Thread: countersThread}, 2, nil) // the process may leave at once: no error to report
		cancel()
	}
	rep.Total.Policy = pol.String()
	for i := range rep.PerProc {
		rep.Total.Add(&rep.PerProc[i])
	}
	rep.Total.Idle = nil
	for _, c := range rep.PerProc {
		rep.Total.Idle = append(rep.Total.Idle, c.Idle...)
	}
	rep.Total.Makespan = makespan
	line, _ := json.Marshal(rep)
	fmt.Fprintf(stdout, "RESULT %s\n", line)
	if traceFile != "" {
		return writeTrace(rt, traceFile, &rep)
	}
	return nil
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// idleTime is how long, on average per VP, the process had nothing to run
// between start and end: from the trace when it is recorded, else the
// time not spent on a CPU (which also counts time runnable but waiting for
// a CPU on a loaded machine).
func idleTime(rt *athread.Runtime, start, end time.Time, cpu time.Duration) time.Duration {
	wall := end.Sub(start)
	if u := rt.Utilisation(start, end); u != nil {
		var idle float64
		for _, x := range u {
			idle += (1 - x) * float64(wall)
		}
		return time.Duration(idle / float64(len(u)))
	}
	return max(0, wall-cpu/time.Duration(max(rt.VPs(), 1)))
}

// writeTrace writes the athread trace with the counters added: a counter
// track per process (Chrome "C" events) and the whole report in the
// trace's metadata.
func writeTrace(rt *athread.Runtime, file string, rep *report) error {
	var buf bytes.Buffer
	if err := rt.WriteTrace(&buf); err != nil {
		return err
	}
	var tr map[string]any
	if err := json.Unmarshal(buf.Bytes(), &tr); err != nil {
		return err
	}
	ev, _ := tr["traceEvents"].([]any)
	ts := float64(time.Now().UnixNano()) / 1e3
	for p, c := range rep.PerProc {
		ev = append(ev, map[string]any{"name": "hws steals", "ph": "C", "ts": ts, "pid": p, "args": map[string]any{
			"local": c.LocalSteals, "local_tried": c.LocalAttempts, "wide": c.WideSteals, "wide_tried": c.WideAttempts}})
		ev = append(ev, map[string]any{"name": "hws bytes", "ph": "C", "ts": ts, "pid": p, "args": map[string]any{
			"local": c.LocalBytes, "wide": c.WideBytes}})
	}
	tr["traceEvents"] = ev
	tr["metadata"] = map[string]any{"hws": rep}
	b, err := json.Marshal(tr)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// parseReport finds the RESULT line in a run's output.
func parseReport(out string) (*report, error) {
	for _, l := range strings.Split(out, "\n") {
		i := strings.Index(l, "RESULT ")
		if i < 0 {
			continue
		}
		var r report
		if err := json.Unmarshal([]byte(l[i+len("RESULT "):]), &r); err != nil {
			return nil, err
		}
		return &r, nil
	}
	return nil, fmt.Errorf("no RESULT line in:\n%s", out)
}
