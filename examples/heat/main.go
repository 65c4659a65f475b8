// Command heat is a master/worker 2-D heat-diffusion solver over pcor
// (Jacobi iterations on an N×N plate, split into row blocks), instrumented
// with perfmodel region timers, and the analysis that models it and
// predicts its run time for sizes and process counts it was not fitted on.
//
// Run under pcorrun, rank 0 is the master and ranks 1..p−1 the workers:
//
//	pcorrun -n P --cpu-share 1=25,2=25,... heat -sizes 256,384 -reps 5 -samples DIR/samples-pP.json
//
// The master times the scatter of the blocks ("scatter", by N and p) and
// the whole solve ("total"); each worker times the unpacking and packing
// of its block ("unpack", "pack", by its points) and its iterations
// ("iter": the halo exchange and the sweep, by its points and p, with
// "halo" and "sweep" apart) and sends its samples to the master, which
// saves them all, by plate size. The first solve of a run is not timed.
//
//	heat -analyze -fit 'n<=1024' -in DIR -out DIR
//
// fits the region models on the runs named by -fit (plates up to a size,
// or process counts: -fit 3,4), composes the program model and writes the
// Table 1 analogue (estimated, measured, error) for every other run.
// run.sh does both steps.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/perfmodel"
)

const (
	tagBlock   pcor.Tag = 0x4801 // master ↔ worker: header + rows
	tagHalo    pcor.Tag = 0x4802 // worker ↔ worker: one boundary row
	tagSamples pcor.Tag = 0x4803 // worker → master: JSON samples
	tagBye     pcor.Tag = 0x4804 // master → worker: all samples are in
)

func main() {
	sizes := flag.String("sizes", "256,384,512", "plate sizes N (comma-separated)")
	reps := flag.Int("reps", 5, "solves per size")
	iters := flag.Int("iters", 100, "Jacobi iterations per solve")
	samples := flag.String("samples", "", "file to save the region samples to (master)")
	analyze := flag.Bool("analyze", false, "fit and predict from saved samples instead of running")
	fit := flag.String("fit", "n<=1024", "with -analyze: the runs the models are fitted on: plates up to a size (n<=1024) or process counts (3,4)")
	in := flag.String("in", ".", "with -analyze: directory of samples-*.json")
	out := flag.String("out", "", "with -analyze: directory for RESULTS.md, models.json and table1.svg")
	timeout := flag.Duration("timeout", 30*time.Minute, "give up after this long")
	flag.Parse()
	var err error
	if *analyze {
		err = analyzeRuns(*in, *out, *fit)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		err = run(ctx, *sizes, *reps, *iters, *samples)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "heat: %v\n", err)
		os.Exit(1)
	}
}

// Samples is what a run saves: every region's samples, the iteration
// count, and the process count.
type Samples struct {
	P     int  `json:"p"`
	Fit   bool `json:"-"` // the analysis fits on these samples
	Iters int  `json:"iters"`
	// Regions holds the samples of every plate size; Plates the same
	// samples by plate size N.
	Regions map[string][]perfmodel.Sample         `json:"regions"`
	Plates  map[int]map[string][]perfmodel.Sample `json:"plates,omitempty"`
}

func run(ctx context.Context, sizeList string, reps, iters int, samplesPath string) error {
	p, err := strconv.Atoi(os.Getenv(directory.EnvSize))
	if err != nil || p < 2 {
		return fmt.Errorf("run under pcorrun with -n 2 or more")
	}
	var ns []int
	for _, f := range strings.Split(sizeList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < p {
			return fmt.Errorf("bad size %q", f)
		}
		ns = append(ns, n)
	}
	node, err := pcor.FromEnv(ctx, pcor.JoinConfig{})
	if err != nil {
		return err
	}
	defer node.Close()
	if err := node.Directory().Wait(ctx, p); err != nil {
		return err
	}
	th := node.NewThread()
	me := int(node.Proc())
	// One solve not recorded: the first of a run costs two to three times
	// the others (first messages between every pair of processes, the
	// heap's first growth), which no model of a solve describes.
	var warm perfmodel.Recorder
	if me == 0 {
		err = solveMaster(ctx, th, &warm, ns[0], p, iters)
	} else {
		err = solveWorker(ctx, th, &warm, me, ns[0], p, iters)
	}
	if err != nil {
		return err
	}
	plates := map[int]*perfmodel.Recorder{}
	for _, n := range ns {
		if plates[n] == nil {
			plates[n] = &perfmodel.Recorder{}
		}
		for range reps {
			if me == 0 {
				err = solveMaster(ctx, th, plates[n], n, p, iters)
			} else {
				err = solveWorker(ctx, th, plates[n], me, n, p, iters)
			}
			if err != nil {
				return err
			}
		}
	}
	byPlate := map[int]map[string][]perfmodel.Sample{}
	for n, r := range plates {
		byPlate[n] = regions(r)
	}
	if me != 0 {
		b, _ := json.Marshal(byPlate)
		if err := th.Send(ctx, pcor.Addr{Proc: 0}, tagSamples, b); err != nil {
			return err
		}
		// Stay until the master has every worker's samples: a process
		// that leaves is removed from the others' membership.
		_, err := th.Recv(ctx, pcor.Addr{Proc: 0}, tagBye)
		if errors.Is(err, pcor.ErrPeerDown) {
			return nil // the master has the samples and left
		}
		return err
	}
	all := Samples{P: p, Iters: iters, Regions: map[string][]perfmodel.Sample{}, Plates: byPlate}
	for w := 1; w < p; w++ {
		m, err := th.Recv(ctx, pcor.Addr{Proc: pcor.ProcID(w)}, tagSamples)
		if err != nil {
			return fmt.Errorf("samples of worker %d: %w", w, err)
		}
		var rs map[int]map[string][]perfmodel.Sample
		if err := json.Unmarshal(m.Data, &rs); err != nil {
			return fmt.Errorf("samples of worker %d: %w", w, err)
		}
		for n, regs := range rs {
			if all.Plates[n] == nil {
				all.Plates[n] = map[string][]perfmodel.Sample{}
			}
			for k, v := range regs {
				all.Plates[n][k] = append(all.Plates[n][k], v...)
			}
		}
	}
	for _, regs := range all.Plates {
		for k, v := range regs {
			all.Regions[k] = append(all.Regions[k], v...)
		}
	}
	for w := 1; w < p; w++ {
		// A worker leaves as soon as it has the bye, which can overtake
		// the acknowledgement the send waits for: a worker down is done.
		if err := th.Send(ctx, pcor.Addr{Proc: pcor.ProcID(w)}, tagBye, nil); err != nil && !errors.Is(err, pcor.ErrPeerDown) {
			return err
		}
	}
	fmt.Printf("p=%d: %d solves timed\n", p, len(all.Regions["total"]))
	if samplesPath == "" {
		return nil
	}
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(samplesPath, b, 0o644)
}

func regions(rec *perfmodel.Recorder) map[string][]perfmodel.Sample {
	out := map[string][]perfmodel.Sample{}
	for _, name := range rec.Names() {
		out[name] = rec.Region(name).Samples()
	}
	return out
}

// block returns the rows [lo, hi) that worker w (1..p−1) owns.
func block(n, p, w int) (lo, hi int) {
	k := p - 1
	base, extra := n/k, n%k
	lo = (w-1)*base + min(w-1, extra)
	hi = lo + base
	if w-1 < extra {
		hi++
	}
	return lo, hi
}

// solveMaster sets up the plate, sends each worker its block, and gathers
// the blocks back after the iterations.
func solveMaster(ctx context.Context, th *pcor.Thread, rec *perfmodel.Recorder, n, p, iters int) error {
	grid := make([]float64, n*n)
	for j := range n {
		grid[j] = 100 // the heated edge
	}
	blockReg, total := rec.Region("block"), rec.Region("total")
	scatter, gather := rec.Region("scatter"), rec.Region("gather")
	t0 := total.Start()
	ts := scatter.Start()
	for w := 1; w < p; w++ {
		lo, hi := block(n, p, w)
		msg := encodeRows(n, lo, hi, grid[lo*n:hi*n])
		s := blockReg.Start()
		if err := th.Send(ctx, pcor.Addr{Proc: pcor.ProcID(w)}, tagBlock, msg); err != nil {
			return err
		}
		blockReg.Stop(s, float64(len(msg)), float64(p))
	}
	scatter.Stop(ts, float64(n), float64(p))
	tg := gather.Start()
	for w := 1; w < p; w++ {
		m, err := th.Recv(ctx, pcor.Addr{Proc: pcor.ProcID(w)}, tagBlock)
		if err != nil {
			return err
		}
		bn, lo, hi, rows, err := decodeRows(m.Data)
		if err != nil || bn != n {
			return fmt.Errorf("block of worker %d: n=%d %v", w, bn, err)
		}
		copy(grid[lo*n:hi*n], rows)
	}
	gather.Stop(tg, float64(n), float64(p))
	total.Stop(t0, float64(n), float64(p))
	// The heat spreads down from the hot edge: the plate's mean stays
	// between 0 and 100 and the row next to the edge warmed up.
	if grid[n+n/2] <= 0 || grid[n+n/2] >= 100 {
		return fmt.Errorf("n=%d: implausible temperature %g next to the edge", n, grid[n+n/2])
	}
	return nil
}

// solveWorker receives its block, iterates with halo exchanges with its
// neighbours, and sends the block back.
func solveWorker(ctx context.Context, th *pcor.Thread, rec *perfmodel.Recorder, w, n, p, iters int) error {
	m, err := th.Recv(ctx, pcor.Addr{Proc: 0}, tagBlock)
	if err != nil {
		return err
	}
	unpack := rec.Region("unpack")
	t0 := unpack.Start()
	bn, lo, hi, rows, err := decodeRows(m.Data)
	if err != nil || bn != n {
		return fmt.Errorf("block: n=%d %v", bn, err)
	}
	// The halo and sweep times are summed over the iterations and recorded
	// once per solve as their mean per iteration: a CPU quota throttles in
	// bursts, so single iterations are bimodal, while their mean over a
	// solve is what the solve costs.
	var haloSum, sweepSum time.Duration
	rowsN := hi - lo
	// cur holds the block with a ghost row above and below.
	cur := make([]float64, (rowsN+2)*n)
	next := make([]float64, (rowsN+2)*n)
	copy(cur[n:], rows)
	unpack.Stop(t0, float64((hi-lo)*n), float64(p))
	up, down := w-1, w+1 // neighbour workers (0 and p: none)
	rowBuf := make([]byte, 8*n)
	recvUp, recvDown := make([]byte, 8*n), make([]byte, 8*n)
	for range iters {
		s := time.Now()
		var reqs []*pcor.Request
		if up >= 1 {
			reqs = append(reqs, th.Isend(pcor.Addr{Proc: pcor.ProcID(up)}, tagHalo, encodeFloats(rowBuf[:0], cur[n:2*n])))
		}
		downBuf := make([]byte, 0, 8*n)
		if down < p {
			reqs = append(reqs, th.Isend(pcor.Addr{Proc: pcor.ProcID(down)}, tagHalo, encodeFloats(downBuf, cur[rowsN*n:(rowsN+1)*n])))
		}
		if up >= 1 {
			m, err := th.RecvInto(ctx, pcor.Addr{Proc: pcor.ProcID(up)}, tagHalo, recvUp)
			if err != nil {
				return err
			}
			decodeFloats(m.Data, cur[:n])
		}
		if down < p {
			m, err := th.RecvInto(ctx, pcor.Addr{Proc: pcor.ProcID(down)}, tagHalo, recvDown)
			if err != nil {
				return err
			}
			decodeFloats(m.Data, cur[(rowsN+1)*n:])
		}
		for _, r := range reqs {
			if err := r.Wait(ctx); err != nil {
				return err
			}
		}
		haloSum += time.Since(s)

		s = time.Now()
		jacobi(cur, next, n, lo, rowsN)
		cur, next = next, cur
		sweepSum += time.Since(s)
	}
	rec.Region("halo").Add(perfmodel.Sample{N: float64(8 * n), P: float64(p), T: haloSum.Seconds() / float64(iters)})
	rec.Region("sweep").Add(perfmodel.Sample{N: float64(rowsN * n), P: float64(p), T: sweepSum.Seconds() / float64(iters)})
	rec.Region("iter").Add(perfmodel.Sample{N: float64(rowsN * n), P: float64(p), T: (haloSum + sweepSum).Seconds() / float64(iters)})
	pack := rec.Region("pack")
	t0 = pack.Start()
	msg := encodeRows(n, lo, hi, cur[n:(rowsN+1)*n])
	pack.Stop(t0, float64(rowsN*n), float64(p))
	return th.Send(ctx, pcor.Addr{Proc: 0}, tagBlock, msg)
}

// jacobi computes one sweep of the block's interior points: each becomes
// the mean of its four neighbours. The plate's outer edge is fixed.
func jacobi(cur, next []float64, n, lo, rows int) {
	for i := 1; i <= rows; i++ {
		g := lo + i - 1 // global row
		c, u, d, o := cur[i*n:(i+1)*n], cur[(i-1)*n:i*n], cur[(i+1)*n:(i+2)*n], next[i*n:(i+1)*n]
		if g == 0 || g == n-1 {
			copy(o, c)
			continue
		}
		o[0], o[n-1] = c[0], c[n-1]
		for j := 1; j < n-1; j++ {
			o[j] = 0.25 * (u[j] + d[j] + c[j-1] + c[j+1])
		}
	}
}

func encodeFloats(b []byte, xs []float64) []byte {
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

func decodeFloats(b []byte, into []float64) {
	for i := range into {
		into[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
}

func encodeRows(n, lo, hi int, rows []float64) []byte {
	b := make([]byte, 0, 24+8*len(rows))
	b = binary.LittleEndian.AppendUint64(b, uint64(n))
	b = binary.LittleEndian.AppendUint64(b, uint64(lo))
	b = binary.LittleEndian.AppendUint64(b, uint64(hi))
	return encodeFloats(b, rows)
}

func decodeRows(b []byte) (n, lo, hi int, rows []float64, err error) {
	if len(b) < 24 {
		return 0, 0, 0, nil, errors.New("short block")
	}
	un, ulo, uhi := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:])
	if un > 1<<15 || ulo > uhi || uhi > un || uint64(len(b)-24) != 8*(uhi-ulo)*un {
		return 0, 0, 0, nil, fmt.Errorf("malformed block header n=%d rows %d-%d, %d bytes", un, ulo, uhi, len(b))
	}
	rows = make([]float64, (uhi-ulo)*un)
	decodeFloats(b[24:], rows)
	return int(un), int(ulo), int(uhi), rows, nil
}
