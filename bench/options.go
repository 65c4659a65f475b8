package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/pcor-go/pcor/bench/internal/pb"
	"github.com/pcor-go/pcor/bench/internal/sizes"
)

// Placements.
const (
	placeSame  = "same"  // both sides in this process (pcor: threads of one Node)
	placeProcs = "procs" // this process and a re-executed copy on this machine
)

// options are the flags of one measurement command.
type options struct {
	cmd       string
	fabric    string
	placement string
	modes     []string
	sizes     []int
	threads   []int
	iters     int
	warmup    int
	duration  time.Duration
	reps      int
	window    int
	timeout   time.Duration
	json, csv bool
	plot      string
	baselines bool
	progress  bool
	trace     string
}

// per-command defaults
var commands = map[string]struct {
	sizes string
	iters int
	unit  string
}{
	"roundtrip":  {"1-16K", 1000, "us"},
	"throughput": {"1-16K", 0, "MB/s"},
	"rate":       {"64", 0, "msg/s"},
	"contention": {"64", 20000, "msg/s"},
	"idle":       {"1", 0, "% CPU"},
}

func newFlagSet(cmd string, o *options, stderr io.Writer) (*flag.FlagSet, *string, *string, *string) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: bench %s [flags]  (bench -h lists the commands)\n\nflags (one that names commands applies to those only):\n", cmd)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.fabric, "fabric", "udp", "fabric of the pcor port: udp, shm (shared memory, --placement procs), or rdma where present")
	fs.StringVar(&o.placement, "placement", placeProcs, "same (one process, one Node) | procs (two processes on this machine)")
	mode := fs.String("mode", "blocking", "dispatcher mode(s): blocking, polling, or a list such as blocking,polling")
	sz := fs.String("sizes", commands[cmd].sizes, "message sizes: list and ranges of powers of two, e.g. 1-16K or 1,64K,2M (at most 64M)")
	th := fs.String("threads", "1,10,100,300,1000", "contention: thread counts")
	fs.IntVar(&o.iters, "iters", commands[cmd].iters, "roundtrip: timed round trips per size (fewer above 64K); contention: messages per sample over all threads")
	fs.IntVar(&o.warmup, "warmup", 100, "untimed messages before each measurement")
	fs.DurationVar(&o.duration, "duration", 200*time.Millisecond, "throughput, rate, idle: length of each sample")
	fs.IntVar(&o.reps, "reps", 5, "repetitions per point, interleaved with the other series (median and spread over them); a round trip's --iters are shared among them")
	fs.IntVar(&o.window, "window", 64, "messages in flight in a stream")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.BoolVar(&o.json, "json", false, "write JSON instead of the table")
	fs.BoolVar(&o.csv, "csv", false, "write CSV instead of the table")
	fs.StringVar(&o.plot, "plot", "", "also write an SVG plot of the curves to this file")
	fs.BoolVar(&o.baselines, "baselines", true, "measure the baselines too")
	fs.BoolVar(&o.progress, "progress", false, "write each pcor sample's median and the counters of both nodes (who received the datagrams: the waiting threads or the dispatchers; retransmissions, BUSY answers, drops) to stderr")
	fs.StringVar(&o.trace, "trace", "", "write a runtime trace (go tool trace) of this process and of each peer process into this directory: near-<pid>.trace, far-<pid>.trace")
	return fs, mode, sz, th
}

func parseOptions(cmd string, args []string, stderr io.Writer) (options, error) {
	o := options{cmd: cmd}
	fs, mode, sz, th := newFlagSet(cmd, &o, stderr)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%s: unexpected argument %q", cmd, fs.Arg(0))
	}
	return o, o.finish(*mode, *sz, *th)
}

// finish validates the options and parses the list flags.
func (o *options) finish(mode, sz, th string) error {
	var err error
	if o.sizes, err = sizes.Parse(sz); err != nil {
		return err
	}
	for _, m := range strings.Split(mode, ",") {
		if _, err := pb.ParseMode(m); err != nil {
			return fmt.Errorf("--mode: unknown dispatcher mode %q (blocking, polling, or both: blocking,polling)", m)
		}
		o.modes = append(o.modes, strings.ToLower(strings.TrimSpace(m)))
	}
	o.threads = nil
	for _, t := range strings.Split(th, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n < 1 || n > 100000 {
			return fmt.Errorf("bad thread count %q (1..100000)", t)
		}
		o.threads = append(o.threads, n)
	}
	switch o.placement {
	case placeSame, placeProcs:
	default:
		return fmt.Errorf("unknown placement %q (same or procs)", o.placement)
	}
	switch o.fabric {
	case "udp", "rdma", "shm":
	default:
		return fmt.Errorf("unknown fabric %q (udp, shm or rdma)", o.fabric)
	}
	switch {
	case o.iters < 0 || o.warmup < 0:
		return fmt.Errorf("negative --iters or --warmup")
	case o.cmd == "roundtrip" && o.iters < 1, o.cmd == "contention" && o.iters < 1:
		return fmt.Errorf("%s needs --iters of at least 1", o.cmd)
	case o.duration <= 0 || o.reps < 1 || o.window < 1 || o.timeout <= 0:
		return fmt.Errorf("--duration, --reps, --window and --timeout must be positive")
	case o.json && o.csv:
		return fmt.Errorf("choose one of --json and --csv")
	}
	return nil
}

// maxSize is the largest message of the run.
func (o *options) maxSize() int {
	m := 1
	for _, s := range o.sizes {
		m = max(m, s)
	}
	return m
}
