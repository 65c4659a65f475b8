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
// of its block ("unpack", "pack", by its points) and its iterations after
// the first ("iter": the halo exchange and the sweep, by its points and p,
// with "halo" and "sweep" apart, "cpu": its CPU time, and "sweep-cpu":
// its sweep's, each per iteration) and sends its samples to the master, which saves them all, by
// plate size, with each solve's slowest worker ("slowest", "slowest-cpu")
// and the rest of the solve ("collect"). The first solve of a run, of the
// widest plate, is not timed.
//
//	heat -analyze -fit 'n=512,768,1024,1536,1792' -in DIR -out DIR
//
// fits the region models on the runs named by -fit (plates of the sizes
// listed, plates up to a size: -fit 'n<=1024', or process counts: -fit
// 3,4), composes the program model and writes the
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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/examples/internal/loadavg"
	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/perfmodel"
	"golang.org/x/sys/unix"
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
	fit := flag.String("fit", "n=512,768,1024,1536,1792", "with -analyze: the runs the models are fitted on: plates of the sizes listed (n=512,1024), up to a size (n<=1024), or process counts (3,4)")
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
	// Load holds the machine's one-minute load average at the start of
	// each timed solve, by plate size.
	Load map[int][]float64 `json:"load,omitempty"`
}

func run(ctx context.Context, sizeList string, reps, iters int, samplesPath string) error {
	p, err := strconv.Atoi(os.Getenv(directory.EnvSize))
	if err != nil || p < 2 {
		return fmt.Errorf("run under pcorrun with -n 2 or more")
	}
	if iters < 2 {
		return fmt.Errorf("-iters %d: at least 2 (the first iteration is not timed)", iters)
	}
	var ns []int
	for _, f := range strings.Split(sizeList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < p || n > maxPlate {
			return fmt.Errorf("bad size %q (want %d..%d)", f, p, maxPlate)
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
	if err := node.Directory().Wait(ctx, p); err != nil {
		return err
	}
	th := node.NewThread()
	me := int(node.Proc())
	// Every buffer is made once for the widest plate and reused by every
	// solve: a solve that allocated its blocks measured the allocator, the
	// page faults and the collector (inside the worker's CPU quota) more
	// than its sweeps.
	var solve func(rec *perfmodel.Recorder, n int) error
	var m *master
	if me == 0 {
		m = newMaster(ctx, th, slices.Max(ns), p, iters)
		solve = m.solve
	} else {
		w := newWorker(th, me, slices.Max(ns), p, iters)
		solve = func(rec *perfmodel.Recorder, n int) error { return w.solve(ctx, rec, n) }
	}
	// One solve not recorded, of the widest plate: the first of a run costs
	// two to three times the others (first messages between every pair of
	// processes, the heap's first growth), and the first solve of each
	// wider plate touched its buffers' pages for the first time (the page
	// faults, inside the workers' quotas, made its scatter 5-10× and its
	// iterations 10-20% slower than the plate's other solves), which no
	// model of a solve describes.
	if err := solve(&perfmodel.Recorder{}, slices.Max(ns)); err != nil {
		return err
	}
	// The plates take turns, in rising then falling order: a change of the
	// machine's load during the run falls on every plate alike, not on the
	// plates run last.
	plates := map[int]*perfmodel.Recorder{}
	load := map[int][]float64{}
	for r := range reps {
		for i := range ns {
			n := ns[i]
			if r%2 == 1 {
				n = ns[len(ns)-1-i]
			}
			if plates[n] == nil {
				plates[n] = &perfmodel.Recorder{}
			}
			if me == 0 {
				load[n] = append(load[n], loadAverage())
			}
			if err := solve(plates[n], n); err != nil {
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
	all := Samples{P: p, Iters: iters, Regions: map[string][]perfmodel.Sample{}, Plates: byPlate, Load: load}
	workers := make([]map[int]map[string][]perfmodel.Sample, p)
	for w := 1; w < p; w++ {
		m, err := th.Recv(ctx, pcor.Addr{Proc: pcor.ProcID(w)}, tagSamples)
		if err != nil {
			return fmt.Errorf("samples of worker %d: %w", w, err)
		}
		var rs map[int]map[string][]perfmodel.Sample
		if err := json.Unmarshal(m.Data, &rs); err != nil {
			return fmt.Errorf("samples of worker %d: %w", w, err)
		}
		workers[w] = rs
		for n, regs := range rs {
			if all.Plates[n] == nil {
				all.Plates[n] = map[string][]perfmodel.Sample{}
			}
			for k, v := range regs {
				all.Plates[n][k] = append(all.Plates[n][k], v...)
			}
		}
	}
	for n, regs := range all.Plates {
		slowest(regs, workers, n, iters)
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
	// Every solve of a plate must have ended with the same plate, and that
	// plate must be the one a single process computes.
	for _, n := range ns {
		if want := gridHash(serialSolve(n, iters)); m.hashes[n] != want {
			return fmt.Errorf("n=%d: the solves' plate differs from the serial solution", n)
		}
	}
	fmt.Printf("p=%d: %d solves timed and checked\n", p, len(all.Regions["total"]))
	if samplesPath == "" {
		return nil
	}
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(samplesPath, b, 0o644)
}

// slowest adds to a plate's regions, for each solve, the iterations of
// the worker that took longest over them ("slowest": its wall time per
// iteration, by its points and p; "slowest-cpu": its CPU time per
// iteration, split into "slowest-sweep-cpu", its sweep's, by its points,
// and "slowest-rest-cpu", the rest: the halo exchange, pcor's, the
// runtime's and the kernel's work, also by its points), and what the solve took besides the scatter and those
// iterations ("collect": the workers' unpacking and packing and the return
// of the blocks, by N and p). The iterations keep the workers in step, so
// the solve waits for the slowest of them.
func slowest(regs map[string][]perfmodel.Sample, workers []map[int]map[string][]perfmodel.Sample, n, iters int) {
	for i, tot := range regs["total"] {
		var slow, cpu, sweep perfmodel.Sample
		for _, rs := range workers {
			its, cpus, sweeps := rs[n]["iter"], rs[n]["cpu"], rs[n]["sweep-cpu"]
			if i < len(its) && i < len(cpus) && i < len(sweeps) && its[i].T > slow.T {
				slow, cpu, sweep = its[i], cpus[i], sweeps[i]
			}
		}
		if slow.T == 0 || i >= len(regs["scatter"]) {
			continue
		}
		regs["slowest"] = append(regs["slowest"], slow)
		regs["slowest-cpu"] = append(regs["slowest-cpu"], cpu)
		regs["slowest-sweep-cpu"] = append(regs["slowest-sweep-cpu"], sweep)
		regs["slowest-rest-cpu"] = append(regs["slowest-rest-cpu"], perfmodel.Sample{N: cpu.N, P: cpu.P, T: cpu.T - sweep.T})
		regs["collect"] = append(regs["collect"], perfmodel.Sample{N: tot.N, P: tot.P,
			T: tot.T - regs["scatter"][i].T - float64(iters)*slow.T})
	}
}

// maxPlate bounds the plate size: a block header naming a larger plate is
// malformed.
const maxPlate = 1 << 15

// loadAverage is the machine's one-minute load average (NaN where
// /proc/loadavg cannot be read).
func loadAverage() float64 {
	v, ok := loadavg.Value()
	if !ok {
		return math.NaN()
	}
	return v
}

// cpuTime is the CPU time this process has used, on every thread: what a
// CPU quota counts.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPU is the CPU time the calling OS thread has used
// (CLOCK_THREAD_CPUTIME_ID: the scheduler's count, to the nanosecond;
// getrusage's thread times are apportioned from clock ticks and go wrong
// over a millisecond) and the thread's id: a goroutine moved to another
// thread between two readings makes their difference meaningless.
func threadCPU() (time.Duration, int) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, -1
	}
	return time.Duration(ts.Nano()), unix.Gettid()
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

// master holds the plate and the block messages of the widest plate.
type master struct {
	ctx      context.Context
	th       *pcor.Thread
	p, iters int
	grid     []float64
	out      [][]byte // per worker: the block message sent
	in       []byte   // a block message received
	hashes   map[int]uint64
}

func newMaster(ctx context.Context, th *pcor.Thread, maxN, p, iters int) *master {
	m := &master{ctx: ctx, th: th, p: p, iters: iters, grid: make([]float64, maxN*maxN), hashes: map[int]uint64{}}
	rows := (maxN + p - 2) / (p - 1)
	m.in = make([]byte, 24+8*rows*maxN)
	for range p - 1 {
		m.out = append(m.out, make([]byte, 0, len(m.in)))
	}
	return m
}

// solve sets up the plate, sends each worker its block, gathers the
// blocks back after the iterations and checks the result.
func (m *master) solve(rec *perfmodel.Recorder, n int) error {
	ctx, th, p := m.ctx, m.th, m.p
	grid := m.grid[:n*n]
	initPlate(grid, n)
	blockReg, total := rec.Region("block"), rec.Region("total")
	scatter, gather := rec.Region("scatter"), rec.Region("gather")
	t0 := total.Start()
	ts := scatter.Start()
	for w := 1; w < p; w++ {
		lo, hi := block(n, p, w)
		msg := appendRows(m.out[w-1][:0], n, lo, hi, grid[lo*n:hi*n])
		s := blockReg.Start()
		if err := th.Send(ctx, pcor.Addr{Proc: pcor.ProcID(w)}, tagBlock, msg); err != nil {
			return err
		}
		blockReg.Stop(s, float64(len(msg)), float64(p))
	}
	scatter.Stop(ts, float64(n), float64(p))
	tg := gather.Start()
	for w := 1; w < p; w++ {
		msg, err := th.RecvInto(ctx, pcor.Addr{Proc: pcor.ProcID(w)}, tagBlock, m.in)
		if err != nil {
			return err
		}
		bn, lo, hi, body, err := decodeRows(msg.Data)
		if err != nil || bn != n {
			return fmt.Errorf("block of worker %d: n=%d %v", w, bn, err)
		}
		if wlo, whi := block(n, p, w); lo != wlo || hi != whi {
			return fmt.Errorf("block of worker %d: rows %d-%d, want %d-%d", w, lo, hi, wlo, whi)
		}
		decodeFloats(body, grid[lo*n:hi*n])
	}
	gather.Stop(tg, float64(n), float64(p))
	total.Stop(t0, float64(n), float64(p))
	// Every solve of a plate ends with the same plate, bit for bit (a
	// point's value does not depend on the blocks): data lost or mixed up
	// on the way shows as a different plate.
	h := gridHash(grid)
	if prev, ok := m.hashes[n]; ok && prev != h {
		return fmt.Errorf("n=%d: a solve ended with a different plate than the first", n)
	}
	m.hashes[n] = h
	return nil
}

// worker holds one worker's block buffers for the widest plate.
type worker struct {
	th              *pcor.Thread
	me, p, iters    int
	in, out         []byte
	cur, next       []float64
	upBuf, downBuf  []byte
	recvUp, recvDwn []byte
}

func newWorker(th *pcor.Thread, me, maxN, p, iters int) *worker {
	rows := (maxN + p - 2) / (p - 1)
	return &worker{
		th: th, me: me, p: p, iters: iters,
		in: make([]byte, 24+8*rows*maxN), out: make([]byte, 0, 24+8*rows*maxN),
		cur: make([]float64, (rows+2)*maxN), next: make([]float64, (rows+2)*maxN),
		upBuf: make([]byte, 0, 8*maxN), downBuf: make([]byte, 0, 8*maxN),
		recvUp: make([]byte, 8*maxN), recvDwn: make([]byte, 8*maxN),
	}
}

// solve receives the worker's block, iterates with halo exchanges with its
// neighbours, and sends the block back.
func (wk *worker) solve(ctx context.Context, rec *perfmodel.Recorder, n int) error {
	th, w, p, iters := wk.th, wk.me, wk.p, wk.iters
	m, err := th.RecvInto(ctx, pcor.Addr{Proc: 0}, tagBlock, wk.in)
	if err != nil {
		return err
	}
	unpack := rec.Region("unpack")
	t0 := unpack.Start()
	bn, lo, hi, body, err := decodeRows(m.Data)
	if err != nil || bn != n {
		return fmt.Errorf("block: n=%d %v", bn, err)
	}
	rowsN := hi - lo
	// cur holds the block with a ghost row above and below.
	cur, next := wk.cur[:(rowsN+2)*n], wk.next[:(rowsN+2)*n]
	clear(cur[:n])
	clear(cur[(rowsN+1)*n:])
	decodeFloats(body, cur[n:(rowsN+1)*n])
	unpack.Stop(t0, float64(rowsN*n), float64(p))
	// The halo and sweep times are summed over the iterations and recorded
	// once per solve as their mean per iteration: a CPU quota throttles in
	// bursts, so single iterations are bimodal, while their mean over a
	// solve is what the solve costs. The process's CPU time over the
	// iterations, against their wall time, is the share of a CPU the
	// worker got. The first iteration is left out: its exchange waits for
	// the neighbours' blocks, which the master sends one after the other
	// (the scatter's time, already measured).
	var haloSum, sweepSum, sweepCPU time.Duration
	swept := 0           // iterations whose sweep's CPU time was read on one thread
	up, down := w-1, w+1 // neighbour workers (0 and p: none)
	var cpu0 time.Duration
	for it := range iters {
		if it == 1 {
			haloSum, sweepSum, sweepCPU, swept, cpu0 = 0, 0, 0, 0, cpuTime()
		}
		s := time.Now()
		var reqs [2]*pcor.Request
		if up >= 1 {
			reqs[0] = th.Isend(pcor.Addr{Proc: pcor.ProcID(up)}, tagHalo, encodeFloats(wk.upBuf[:0], cur[n:2*n]))
		}
		if down < p {
			reqs[1] = th.Isend(pcor.Addr{Proc: pcor.ProcID(down)}, tagHalo, encodeFloats(wk.downBuf[:0], cur[rowsN*n:(rowsN+1)*n]))
		}
		if up >= 1 {
			m, err := th.RecvInto(ctx, pcor.Addr{Proc: pcor.ProcID(up)}, tagHalo, wk.recvUp[:8*n])
			if err != nil {
				return err
			}
			decodeFloats(m.Data, cur[:n])
		}
		if down < p {
			m, err := th.RecvInto(ctx, pcor.Addr{Proc: pcor.ProcID(down)}, tagHalo, wk.recvDwn[:8*n])
			if err != nil {
				return err
			}
			decodeFloats(m.Data, cur[(rowsN+1)*n:])
		}
		for _, r := range reqs {
			if r == nil {
				continue
			}
			if err := r.Wait(ctx); err != nil {
				return err
			}
		}
		haloSum += time.Since(s)

		s = time.Now()
		c0, tid0 := threadCPU()
		jacobi(cur, next, n, lo, rowsN)
		if c1, tid1 := threadCPU(); tid1 == tid0 && tid0 >= 0 {
			sweepCPU += c1 - c0
			swept++
		}
		cur, next = next, cur
		sweepSum += time.Since(s)
	}
	cpu := cpuTime() - cpu0
	x := float64(rowsN * n)
	k := float64(iters - 1)
	rec.Region("halo").Add(perfmodel.Sample{N: float64(8 * n), P: float64(p), T: haloSum.Seconds() / k})
	rec.Region("sweep").Add(perfmodel.Sample{N: x, P: float64(p), T: sweepSum.Seconds() / k})
	rec.Region("iter").Add(perfmodel.Sample{N: x, P: float64(p), T: (haloSum + sweepSum).Seconds() / k})
	rec.Region("cpu").Add(perfmodel.Sample{N: x, P: float64(p), T: cpu.Seconds() / k})
	// One sample per solve, as every region's: in the unlikely solve
	// whose every sweep changed threads, the sweeps' wall time.
	sweepT := sweepSum.Seconds() / k
	if swept > 0 {
		sweepT = sweepCPU.Seconds() / float64(swept)
	}
	rec.Region("sweep-cpu").Add(perfmodel.Sample{N: x, P: float64(p), T: sweepT})
	pack := rec.Region("pack")
	t0 = pack.Start()
	wk.out = appendRows(wk.out[:0], n, lo, hi, cur[n:(rowsN+1)*n])
	pack.Stop(t0, x, float64(p))
	return th.Send(ctx, pcor.Addr{Proc: 0}, tagBlock, wk.out)
}

// initPlate sets the plate's starting temperatures: the top edge at 100,
// every other point at 0.
func initPlate(grid []float64, n int) {
	clear(grid)
	for j := range n {
		grid[j] = 100 // the heated edge
	}
}

// serialSolve is the plate after iters sweeps computed by one process.
func serialSolve(n, iters int) []float64 {
	cur, next := make([]float64, (n+2)*n), make([]float64, (n+2)*n)
	initPlate(cur[n:(n+1)*n], n)
	for range iters {
		jacobi(cur, next, n, 0, n)
		cur, next = next, cur
	}
	return cur[n : (n+1)*n]
}

// gridHash hashes a plate's values bit for bit.
func gridHash(grid []float64) uint64 {
	d := xxhash.New()
	buf := make([]byte, 0, 8*4096)
	for len(grid) > 0 {
		k := min(len(grid), 4096)
		d.Write(encodeFloats(buf[:0], grid[:k]))
		grid = grid[k:]
	}
	return d.Sum64()
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

// appendRows appends the block message of rows [lo, hi) of an n-wide
// plate to b: n, lo and hi as little-endian uint64, then the rows.
func appendRows(b []byte, n, lo, hi int, rows []float64) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(n))
	b = binary.LittleEndian.AppendUint64(b, uint64(lo))
	b = binary.LittleEndian.AppendUint64(b, uint64(hi))
	return encodeFloats(b, rows)
}

// decodeRows checks a block message's header against its length and
// returns the rows' bytes.
func decodeRows(b []byte) (n, lo, hi int, body []byte, err error) {
	if len(b) < 24 {
		return 0, 0, 0, nil, errors.New("short block")
	}
	un, ulo, uhi := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:])
	if un > maxPlate || ulo > uhi || uhi > un || uint64(len(b)-24) != 8*(uhi-ulo)*un {
		return 0, 0, 0, nil, fmt.Errorf("malformed block header n=%d rows %d-%d, %d bytes", un, ulo, uhi, len(b))
	}
	return int(un), int(ulo), int(uhi), b[24:], nil
}
