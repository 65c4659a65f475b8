// Package athreadmain is the common start of the athread case studies:
// flags for the trace and DAG files, the runtime (alone or under
// pcorrun), and the counters at the end.
package athreadmain

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/pcor-go/pcor/athread"
)

var (
	traceFile = flag.String("trace", "", "write the execution trace (Chrome trace-event JSON) to this file")
	dotFile   = flag.String("dot", "", "write the task graph (Graphviz DOT) to this file")
	vps       = flag.Int("vps", 0, "VPs per process (default $ATHREAD_VPS, else GOMAXPROCS)")
	timeout   = flag.Duration("timeout", 5*time.Minute, "give up after this long")
	counters  = flag.Bool("counters", false, "print every process's counters at the end")
	cpuprof   = flag.String("cpuprofile", "", "write a CPU profile of this process to this file")
)

// Main parses the flags, starts the runtime, runs body in process 0 while
// the other processes serve, writes the files asked for and exits.
func Main(name string, body func(ctx context.Context, rt *athread.Runtime) error) {
	MainThen(name, body, nil)
}

// MainThen is Main with a last step: then runs in process 0 after the run,
// once the other processes' traces are in (for Runtime.JobUtilisation).
func MainThen(name string, body func(ctx context.Context, rt *athread.Runtime) error, then func(rt *athread.Runtime) error) {
	flag.Parse()
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	if err := run(body, then); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		if *cpuprof != "" {
			pprof.StopCPUProfile()
		}
		os.Exit(1)
	}
}

func run(body func(ctx context.Context, rt *athread.Runtime) error, then func(rt *athread.Runtime) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	rt, err := athread.FromEnv(ctx, athread.Config{VPs: *vps, Trace: *traceFile != "", DAG: *dotFile != ""})
	if err != nil {
		return err
	}
	defer rt.Close()
	err = rt.Run(ctx, func(ctx context.Context) error { return body(ctx, rt) })
	if *counters {
		fmt.Printf("process %d counters: %+v\n", rt.Proc(), rt.Counters())
	}
	if err != nil || rt.Proc() != 0 {
		return err
	}
	if then != nil {
		if err := then(rt); err != nil {
			return err
		}
	}
	if *traceFile != "" {
		if err := writeFile(*traceFile, rt.WriteTrace); err != nil {
			return err
		}
	}
	if *dotFile != "" {
		if err := writeFile(*dotFile, rt.WriteDOT); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(name string, write func(w io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
