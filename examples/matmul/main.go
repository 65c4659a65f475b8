// Command matmul is a master/worker matrix multiplication C = A·B over
// pcor, run under pcorrun: rank 0 is the master, the others are workers.
// For each matrix size it calibrates every worker (timing ranges of rows
// to fit T(rows) = a + b·rows per worker, whose ratios are the VRP), then
// multiplies with each work-distribution strategy — SS, GSS, an even
// static split, static VRP and VRP-SS (revising the VRP from the rates it
// observes, the methodology's monitoring step) — in rotating order over several
// repetitions, checks every product, and writes a table of median times,
// a plot like PEMPIs-Het's Figure 2, the fitted models of each strategy's
// time in n, and the calibration models (JSON).
//
//	./run.sh                      # builds pcorrun and matmul, runs with CPU shares 100/50/25%
//	pcorrun -n 4 --cpu-share 1=100,2=50,3=25 matmul -sizes 256,512 -reps 3 -out DIR
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/distribute"
	"github.com/pcor-go/pcor/pcor"
)

// TagSetup carries a worker's copy of B before each phase: n as a
// little-endian uint64, then B row by row (n = 0: exit).
const TagSetup pcor.Tag = 0x4d53

func main() {
	sizes := flag.String("sizes", "256,384,512,640,768", "matrix sizes n (comma-separated)")
	reps := flag.Int("reps", 3, "repetitions of each strategy per size")
	out := flag.String("out", "", "directory for RESULTS.md, figure2.svg and models.json (default: print only)")
	models := flag.String("models", "", "load the workers' calibration models from this JSON instead of calibrating")
	timeout := flag.Duration("timeout", 20*time.Minute, "give up after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *sizes, *reps, *out, *models); err != nil {
		fmt.Fprintf(os.Stderr, "matmul: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, sizeList string, reps int, out, models string) error {
	size, err := strconv.Atoi(os.Getenv(directory.EnvSize))
	if err != nil || size < 2 {
		return fmt.Errorf("run under pcorrun with -n 2 or more (%s=%q)", directory.EnvSize, os.Getenv(directory.EnvSize))
	}
	var ns []int
	for _, f := range strings.Split(sizeList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("bad size %q", f)
		}
		ns = append(ns, n)
	}
	// A worker limited to a quarter of a CPU on a loaded machine can be
	// off the CPU for seconds: it is slow, not gone.
	node, err := pcor.FromEnv(ctx, pcor.JoinConfig{Node: pcor.Config{UnreachableTimeout: 30 * time.Second}})
	if err != nil {
		return err
	}
	defer node.Close()
	if err := node.Directory().Wait(ctx, size); err != nil {
		return err
	}
	if node.Proc() != 0 {
		return worker(ctx, node.NewThread())
	}
	var workers []pcor.Addr
	for p := 1; p < size; p++ {
		workers = append(workers, pcor.Addr{Proc: pcor.ProcID(p), Thread: 0})
	}
	m := &master{node: node, th: node.NewThread(), workers: workers}
	defer m.stopWorkers(ctx)
	return m.experiment(ctx, ns, reps, out, models)
}

// worker serves phases until told to exit.
func worker(ctx context.Context, th *pcor.Thread) error {
	for {
		msg, err := th.Recv(ctx, pcor.Addr{Proc: 0, Thread: pcor.AnyThread}, TagSetup)
		if errors.Is(err, pcor.ErrPeerDown) {
			// The master left between phases: after its last word to
			// this worker (n = 0), which the departure can overtake.
			return nil
		}
		if err != nil {
			return err
		}
		n, b, err := decodeSetup(msg.Data)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		// The buffers are reused from range to range (Serve copies the
		// result before the next call): a worker that allocated each
		// result row timed the allocator and the collector inside its
		// CPU quota, and more so the more ranges a strategy cuts.
		row, crow := make([]float64, n), make([]float64, n)
		var out []byte
		_, err = distribute.Serve(ctx, th, func(r distribute.Range, in []byte) ([]byte, error) {
			if len(in) != 8*n*r.Len() {
				return nil, fmt.Errorf("input of %d bytes for %d rows of %d", len(in), r.Len(), n)
			}
			out = out[:0]
			for i := range r.Len() {
				a := decodeRow(in[8*n*i:8*n*(i+1)], row)
				out = appendRow(out, multiplyRow(crow, a, b, n))
			}
			return out, nil
		})
		if err != nil {
			return err
		}
	}
}

// multiplyRow sets c to row a (length n) times the n×n matrix b and
// returns it.
func multiplyRow(c, a, b []float64, n int) []float64 {
	clear(c)
	for k, aik := range a {
		bk := b[k*n : (k+1)*n]
		for j, v := range bk {
			c[j] += aik * v
		}
	}
	return c
}

func appendRow(b []byte, row []float64) []byte {
	for _, v := range row {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func decodeRow(b []byte, into []float64) []float64 {
	for i := range into {
		into[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return into
}

func decodeSetup(b []byte) (int, []float64, error) {
	if len(b) < 8 {
		return 0, nil, errors.New("short setup message")
	}
	n := binary.LittleEndian.Uint64(b)
	if n > 1<<14 || uint64(len(b)-8) != 8*n*n {
		return 0, nil, fmt.Errorf("setup for n=%d with %d bytes", n, len(b))
	}
	m := make([]float64, n*n)
	return int(n), decodeRow(b[8:], m), nil
}

func encodeSetup(n int, b []float64) []byte {
	out := binary.LittleEndian.AppendUint64(make([]byte, 0, 8+8*len(b)), uint64(n))
	return appendRow(out, b)
}

// randomMatrix is an n×n matrix of uniform numbers in [-1, 1).
func randomMatrix(rng *rand.Rand, n int) []float64 {
	m := make([]float64, n*n)
	for i := range m {
		m[i] = 2*rng.Float64() - 1
	}
	return m
}

// check verifies C = A·B with Freivalds' test: C·x = A·(B·x) for a
// random x, in O(n²).
func check(a, b, c []float64, n int, rng *rand.Rand) error {
	x := make([]float64, n)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	mv := func(m, v []float64) []float64 {
		out := make([]float64, n)
		for i := range n {
			var s float64
			for j, mij := range m[i*n : (i+1)*n] {
				s += mij * v[j]
			}
			out[i] = s
		}
		return out
	}
	want, got := mv(a, mv(b, x)), mv(c, x)
	for i := range n {
		if d := math.Abs(want[i] - got[i]); d > 1e-9*float64(n) {
			return fmt.Errorf("row %d of C is wrong (off by %g)", i, d)
		}
	}
	return nil
}
