// Command bench measures pcor-go thread-to-thread messaging against raw
// baselines, the analogue of Figure 3 of the pCoR paper (round-trip time
// and one-way throughput from 1 B to 16 KB beside the raw host-to-host
// figures).
//
// Usage:
//
//	go run ./bench roundtrip  [flags]   ping-pong: median µs per size (p99 too with --json or --csv)
//	go run ./bench throughput [flags]   one-way stream: MB/s per size
//	go run ./bench rate       [flags]   small-message rate, one way (64 B): messages/s
//	go run ./bench contention [flags]   N threads each receiving its own stream at once
//	go run ./bench idle       [flags]   CPU an idle pair of blocking nodes burns: % of one CPU
//	go run ./bench report     [flags]   all of them, both placements and modes: RESULTS.md and results.svg
//
// Every pcor figure is printed with the ratio of its median to the median
// of a baseline measured in the same run, the series sampled in turn
// --reps times: a Go channel ping-pong (each side copying the payload) or
// stream for threads of one process; for two processes, UDP ping-pongs
// over a net.UDPConn, over a blocking socket read with x/sys on a locked
// thread, and over a non-blocking socket polled the same way, a raw
// unbatched UDP stream (fabric/udp with one datagram per system call), and
// a raw TCP stream on loopback for large-message throughput. Beside each
// time the table shows what both processes spent per round trip or
// message: CPU time, context switches and system calls. With --placement
// procs the benchmark re-executes itself as the peer processes, one per
// series.
//
// With --fabric rdma and --placement procs the baseline is raw verbs
// between the same two processes on the same RDMA device: a SEND/RECV
// ping-pong (ib_send_lat) for round trips and an RDMA WRITE stream
// (ib_write_bw) for throughput and rate. Without an RDMA device
// --fabric rdma fails at once; bench/rdma-vm.sh runs it in the soft-RoCE
// VM beside perftest and writes RESULTS-rdma.md.
//
// With --fabric shm (two processes on this machine through shared memory)
// the baselines also hold pcor itself over UDP on loopback (series
// pcor-udp/MODE, sampled in turn with the rest) and, for throughput, a
// single-threaded memmove of each message into one buffer (series
// memmove) and into as many as the stream's sink posts receives (series
// memmove-spread).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/trace"
	"time"

	"github.com/pcor-go/pcor/bench/internal/peer"
)

func main() {
	if peer.IsChild() {
		os.Exit(serveChild())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
}

// serveChild is the peer process: it serves jobs on stdin/stdout.
func serveChild() int {
	if dir := os.Getenv(peer.TraceEnvVar); dir != "" {
		stop, err := startTrace(dir, "far")
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench peer:", err)
			return 1
		}
		defer stop()
	}
	if err := peer.Serve(context.Background(), os.Stdin, os.Stdout, childHandlers()); err != nil {
		fmt.Fprintln(os.Stderr, "bench peer:", err)
		return 1
	}
	return 0
}

// startTrace writes a runtime trace of this process into dir (made if
// need be) until stop is called.
func startTrace(dir, side string) (stop func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(peer.TraceFile(dir, side, os.Getpid()))
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("trace: %w", err)
	}
	return func() {
		trace.Stop()
		f.Close()
	}, nil
}

const usageText = `usage: bench <command> [flags]

commands:
  roundtrip   ping-pong round-trip time per size (median µs; p99 too with --json or --csv)
  throughput  one-way stream throughput per size (MB/s)
  rate        one-way small-message rate (messages/s, 64 B by default)
  contention  N threads each receiving its own stream at once (msgs/s, MB/s)
  idle        CPU burnt by an idle pair of nodes (% of one CPU)
  report      run everything for both placements and modes; write RESULTS.md and results.svg

run "bench <command> -h" for the flags.
`

// run executes one command line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return errors.New("no command given")
	}
	cmd := args[0]
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return nil
	case "report":
		return runReport(ctx, args[1:], stdout, stderr)
	}
	if _, ok := commands[cmd]; !ok {
		fmt.Fprint(stderr, usageText)
		return fmt.Errorf("unknown command %q", cmd)
	}
	o, err := parseOptions(cmd, args[1:], stderr)
	if err != nil {
		return err
	}
	if o.trace != "" {
		stop, err := startTrace(o.trace, "near")
		if err != nil {
			return err
		}
		defer stop()
	}
	// Every wait of a measurement ends with its context (--timeout): a
	// command still running a minute past it hangs in something that
	// does not heed it (a close, a system call, a peer process that is
	// not reaped). Say where, and end with an error.
	wd := time.AfterFunc(o.timeout+time.Minute, func() { hung(stderr, o.timeout+time.Minute) })
	defer wd.Stop()
	res, err := measure(ctx, o, stderr)
	if err != nil {
		return err
	}
	return output(o, res, stdout)
}

// hung reports a command that ran d, past its --timeout: every goroutine's
// stack, then exit status 3.
func hung(stderr io.Writer, d time.Duration) {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	fmt.Fprintf(stderr, "bench: still running %v after it started, past --timeout: hung; goroutines:\n%s\n", d, buf)
	os.Exit(3)
}
