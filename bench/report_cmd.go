package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/bench/internal/report"
)

// reportCommand is the documented command that regenerates RESULTS.md.
const reportCommand = "go run ./bench report"

// runReport runs every command for each placement and writes RESULTS.md,
// results.svg and results.json into --out.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "bench", "directory for RESULTS.md, results.svg and results.json")
	places := fs.String("placements", "same,procs", "placements to run")
	modes := fs.String("mode", "blocking,polling", "dispatcher modes")
	sz := fs.String("sizes", "1-16K,64K,2M", "message sizes of roundtrip and throughput")
	th := fs.String("threads", "1,10,100,300,1000", "contention thread counts")
	fabric := fs.String("fabric", "udp", "pcor fabric")
	iters := fs.Int("iters", 500, "round trips per size")
	citers := fs.Int("contention-iters", 20000, "contention: messages per sample over all threads")
	warmup := fs.Int("warmup", 50, "untimed messages before each measurement")
	dur := fs.Duration("duration", 100*time.Millisecond, "length of each stream sample")
	reps := fs.Int("reps", 3, "samples per stream point")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("report: unexpected argument %q", fs.Arg(0))
	}
	if *out == "" {
		return errors.New("report: --out is empty")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	start := time.Now()
	var rs []*report.Result
	var cmdlines []string
	for _, pl := range strings.Split(*places, ",") {
		for _, cmd := range []string{"roundtrip", "throughput", "rate", "contention"} {
			o := options{cmd: cmd, fabric: *fabric, placement: strings.TrimSpace(pl), iters: *iters, warmup: *warmup,
				duration: *dur, reps: *reps, window: 64, timeout: *timeout, baselines: true}
			s := *sz
			switch cmd {
			case "rate", "contention":
				s = commands[cmd].sizes
			}
			if cmd == "contention" {
				o.iters = *citers
			}
			if err := o.finish(*modes, s, *th); err != nil {
				return err
			}
			line := fmt.Sprintf("go run ./bench %s --placement %s --fabric %s --mode %s", cmd, o.placement, o.fabric, *modes)
			switch cmd {
			case "roundtrip":
				line += fmt.Sprintf(" --sizes %s --iters %d --warmup %d", s, o.iters, o.warmup)
			case "throughput", "rate":
				line += fmt.Sprintf(" --sizes %s --duration %s --reps %d --warmup %d", s, o.duration, o.reps, o.warmup)
			case "contention":
				line += fmt.Sprintf(" --threads %s --iters %d --reps %d", *th, o.iters, o.reps)
			}
			cmdlines = append(cmdlines, line)
			res, err := measure(ctx, o, stderr)
			if err != nil {
				return fmt.Errorf("%s %s: %w", cmd, pl, err)
			}
			if err := report.WriteTable(stdout, res); err != nil {
				return err
			}
			fmt.Fprintln(stdout)
			rs = append(rs, res)
		}
	}
	if err := writePlot(filepath.Join(*out, "results.svg"), rs); err != nil {
		return err
	}
	jf, err := os.Create(filepath.Join(*out, "results.json"))
	if err != nil {
		return err
	}
	if err := report.WriteJSON(jf, rs); err != nil {
		jf.Close()
		return err
	}
	if err := jf.Close(); err != nil {
		return err
	}
	md, err := os.Create(filepath.Join(*out, "RESULTS.md"))
	if err != nil {
		return err
	}
	writeMarkdown(md, rs, cmdlines, args, time.Since(start))
	return md.Close()
}

// machine describes the host the way RESULTS.md records it.
func machine() []string {
	cpu := "unknown"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	kernel := "unknown"
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])
	}
	load := "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return []string{
		fmt.Sprintf("nproc: %d (GOMAXPROCS %d)", runtime.NumCPU(), runtime.GOMAXPROCS(0)),
		"load average at the end of the run (1, 5, 15 min): " + load,
		"CPU: " + cpu,
		"kernel: " + kernel,
		"Go: " + runtime.Version(),
	}
}

// target is one of the project's performance goals, read off the results.
type target struct {
	goal     string
	cmd, pl  string
	series   string
	baseline string
	size     int
	threads  int
	atMost   bool // the ratio must not exceed limit (else: at least)
	limit    float64
}

var targets = []target{
	{"same process, 1 B round trip ≤ 2x Go channel ping-pong", "roundtrip", placeSame, "pcor/blocking", "chan", 1, 0, true, 2},
	{"same process, 1 B round trip ≤ 2x Go channel ping-pong (polling)", "roundtrip", placeSame, "pcor/polling", "chan", 1, 0, true, 2},
	{"two processes, UDP, blocking, 1 B round trip ≤ 1.3x raw UDP ping-pong", "roundtrip", placeProcs, "pcor/blocking", "udp", 1, 0, true, 1.3},
	{"two processes, 64 KiB throughput ≥ 90% of raw UDP 64 KiB stream", "throughput", placeProcs, "pcor/blocking", "udp", 64 << 10, 0, false, 0.9},
	{"two processes, 2 MiB throughput ≥ 80% of raw TCP stream", "throughput", placeProcs, "pcor/blocking", "tcp", 2 << 20, 0, false, 0.8},
	{"two processes, 64 B rate ≥ 3x raw unbatched UDP rate", "rate", placeProcs, "pcor/blocking", "udp", 64, 0, false, 3},
	{"two processes, contention: 1000 threads ≥ 80% of the best rate", "contention", placeProcs, "pcor/blocking", "best", 64, 1000, false, 0.8},
	{"same process, contention: 1000 threads ≥ 80% of the best rate", "contention", placeSame, "pcor/blocking", "best", 64, 1000, false, 0.8},
}

func writeMarkdown(w io.Writer, rs []*report.Result, cmdlines, args []string, took time.Duration) {
	fmt.Fprintf(w, "# pcor-go benchmark results\n\n")
	fmt.Fprintf(w, "Regenerate with `%s` (run from the repository root%s; it took %s). ",
		reportCommand, argsNote(args), took.Round(time.Second))
	fmt.Fprintf(w, "Every ratio is the pcor median over the baseline median measured in the same run: "+
		"a Go channel for threads of one process; raw UDP (fabric/udp, one datagram per system call, no pcor) "+
		"and raw TCP on loopback for two processes, the second being the benchmark re-executed.\n\n")
	fmt.Fprintf(w, "Generated %s.\n\n## Machine\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	for _, m := range machine() {
		fmt.Fprintf(w, "- %s\n", m)
	}
	fmt.Fprintf(w, "\n## Targets\n\n| goal | measured | met |\n|---|---|---|\n")
	for _, t := range targets {
		got, met := "not measured", "-"
		for _, r := range rs {
			if r.Command != t.cmd || r.Placement != t.pl {
				continue
			}
			if v, ok := r.Ratio(t.series, t.baseline, t.size, t.threads); ok {
				got = fmt.Sprintf("%.2fx", v)
				met = "no"
				if t.atMost && v <= t.limit || !t.atMost && v >= t.limit {
					met = "yes"
				}
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.goal, got, met)
	}
	fmt.Fprintf(w, "\n## Figure 3 analogue\n\n![round trip and throughput against message size](results.svg)\n\n")
	fmt.Fprintf(w, "## Commands\n\nThe report runs the equivalent of:\n\n```\n%s\n```\n\n", strings.Join(cmdlines, "\n"))
	fmt.Fprintf(w, "## Tables\n\n")
	for _, r := range rs {
		fmt.Fprintf(w, "### %s, %s\n\n```\n", r.Command, r.Placement)
		report.WriteTable(w, r)
		fmt.Fprintf(w, "```\n\n")
	}
	fmt.Fprintf(w, "Raw data: [results.json](results.json). Sizes are bytes (K = KiB, M = MiB); MB/s is 10^6 bytes per second.\n")
}

func argsNote(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return "; this report used the flags `" + strings.Join(args, " ") + "`"
}
