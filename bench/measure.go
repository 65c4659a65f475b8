package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/pcor-go/pcor/bench/internal/pb"
	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/bench/internal/raw"
	"github.com/pcor-go/pcor/bench/internal/report"
	"github.com/pcor-go/pcor/bench/internal/sizes"
	"github.com/pcor-go/pcor/bench/internal/stats"
	"github.com/pcor-go/pcor/bench/internal/usage"
	"github.com/pcor-go/pcor/fabric/rdma"
)

// measure runs one command and returns its result.
//
// Round trips, streams and rates are interleaved: at each size every series
// (the baselines, then pcor in each dispatcher mode) takes a sample in
// turn, --reps times, so a load that comes and goes on the machine weighs
// on all of them alike and the ratios of medians stay fair. A polling
// series runs only during its own samples (its node is opened for each),
// so that its spinning does not slow the others down. Around each sample
// the spending of both processes is read, for the per-operation figures.
func measure(ctx context.Context, o options, stderr io.Writer) (*report.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if o.fabric == "rdma" {
		if err := rdma.Probe(rdma.Config{}); err != nil {
			return nil, fmt.Errorf("--fabric rdma needs an RDMA device (soft-RoCE will do: see bench/rdma-vm.sh): %w", err)
		}
	}
	r, err := newRunner(o, stderr)
	if err != nil {
		return nil, err
	}
	defer r.close()
	res := &report.Result{Command: o.cmd, Placement: o.placement, Fabric: o.fabric, Unit: commands[o.cmd].unit}
	col := newCollector()
	switch o.cmd {
	case "contention", "idle":
		for _, mode := range o.modes {
			s, err := r.openPcor(o.fabric, mode)
			if err != nil {
				return nil, err
			}
			if o.cmd == "idle" {
				err = r.idle(ctx, s, col)
			} else {
				err = r.contention(ctx, s, col)
			}
			s.close()
			if err != nil {
				return nil, err
			}
		}
	default:
		var series []sampler
		defer func() {
			for _, b := range series {
				if b.close != nil {
					b.close()
				}
			}
		}()
		if o.baselines {
			series, err = r.openBaselines(ctx, res)
			if err != nil {
				return nil, err
			}
			shm, err := r.openShmBaselines(ctx, res)
			series = append(series, shm...)
			if err != nil {
				return nil, err
			}
		}
		for _, mode := range o.modes {
			pc, err := r.openPcorSampler(ctx, o.fabric, mode)
			if err != nil {
				return nil, err
			}
			series = append(series, pc)
		}
		if err := r.interleave(ctx, series, col); err != nil {
			return nil, err
		}
	}
	col.into(res)
	if o.fabric != "udp" && o.baselines && o.cmd != "contention" && o.cmd != "idle" {
		if r.verbsBaseline() {
			res.Notes = append(res.Notes, verbsNote[o.cmd])
			res.Notes = append(res.Notes, col.pairedNotes("verbs")...)
		} else if o.placement == placeSame {
			res.Notes = append(res.Notes, "threads of one process exchange messages without a fabric: with --placement same every --fabric measures the same")
		} else {
			res.Notes = append(res.Notes, "the baselines other than pcor-udp and memmove are raw UDP and TCP on loopback; pcor-udp is pcor over UDP between the same two processes")
		}
	}
	if why := usage.SyscallsUnavailable(); why != "" {
		res.Notes = append(res.Notes, why)
	}
	switch o.cmd {
	case "roundtrip":
		res.Notes = append(res.Notes, fmt.Sprintf("%d repetitions of %d timed round trips per size up to 64K (fewer above), each after %d warm-up "+
			"(a polling pcor sample, on a fresh node, after %s of them too); median of the repetitions' medians, ± their spread (max-min)/median",
			o.reps, o.repIters(64<<10), o.warmup, pollingWarm))
	case "idle":
		res.Notes = append(res.Notes, fmt.Sprintf("%d samples of %s each: CPU of the busier of the two idle processes, %% of one CPU", o.reps, o.duration))
	default:
		res.Notes = append(res.Notes, fmt.Sprintf("%d repetitions per point, interleaved; window %d", o.reps, o.window))
	}
	res.Finish()
	return res, nil
}

// collector gathers samples per series and size in order of first sight.
type collector struct {
	order []string
	keys  map[string][][2]int
	pts   map[string]map[[2]int]*entry
}

// entry is what the samples of one series at one size gave.
type entry struct {
	reps, all []float64
	use       usage.Counts
	ops       int64
	metered   bool
	err       error
}

// sampled is what one sample gives: its values (round-trip times, or one
// MB/s or msg/s figure) and what both processes spent on its ops
// operations (round trips or messages).
type sampled struct {
	xs      []float64
	ops     int64
	use     usage.Counts
	metered bool
}

func newCollector() *collector {
	return &collector{keys: map[string][][2]int{}, pts: map[string]map[[2]int]*entry{}}
}

func (c *collector) add(series string, size, threads int, s sampled, err error) {
	k := [2]int{size, threads}
	if c.pts[series] == nil {
		c.order = append(c.order, series)
		c.pts[series] = map[[2]int]*entry{}
	}
	e := c.pts[series][k]
	if e == nil {
		e = &entry{use: usage.Counts{HasSyscalls: true}}
		c.pts[series][k] = e
		c.keys[series] = append(c.keys[series], k)
	}
	if len(s.xs) > 0 {
		e.reps = append(e.reps, median(s.xs))
		e.all = append(e.all, s.xs...)
	}
	if s.metered && s.ops > 0 {
		e.use = e.use.Add(s.use)
		e.ops += s.ops
		e.metered = true
	}
	if err != nil && e.err == nil {
		e.err = err
	}
}

func median(xs []float64) float64 {
	sm, _ := stats.Summarize(xs)
	return sm.Median
}

func (c *collector) into(res *report.Result) {
	for _, s := range c.order {
		for _, k := range c.keys[s] {
			e := c.pts[s][k]
			err := e.err
			if err != nil && len(e.reps) > 0 {
				res.Notes = append(res.Notes, fmt.Sprintf("%s at %s: %d samples kept after: %v", s, sizes.Format(k[0]), len(e.reps), err))
				err = nil
			}
			var per *report.PerOp
			if e.metered {
				n := float64(e.ops)
				per = &report.PerOp{CPU: float64(e.use.CPU) / 1e3 / n, Switches: float64(e.use.Switches()) / n,
					Voluntary: float64(e.use.Voluntary) / n, Syscalls: -1}
				if e.use.HasSyscalls {
					per.Syscalls = float64(e.use.Syscalls) / n
				}
			}
			res.AddReps(s, k[0], k[1], e.reps, e.all, per, err)
		}
	}
}

// sampler is one series.
type sampler struct {
	name   string
	warm   func(ctx context.Context, size int) error // may be nil
	sample func(ctx context.Context, size int) (sampled, error)
	close  func()
}

// metered runs fn, one sample, and adds what this process and the far
// process (if any) spent meanwhile. The far process is asked before and
// after, outside this process's window; the few system calls of its
// answers are counted in it.
func metered(ctx context.Context, far *peer.Process, fn func() (sampled, error)) (sampled, error) {
	var f0 usage.Counts
	if far != nil {
		var err error
		if f0, err = far.Usage(ctx); err != nil {
			return sampled{}, err
		}
	}
	s0 := usage.Self()
	out, err := fn()
	use := usage.Self().Sub(s0)
	if err != nil {
		return out, err
	}
	if far != nil {
		f1, err := far.Usage(ctx)
		if err != nil {
			return out, err
		}
		use = use.Add(f1.Sub(f0))
	}
	out.use, out.metered = use, true
	return out, nil
}

// farProcess is the host as a peer process, or nil for this process.
func farProcess(h peer.Host) *peer.Process {
	p, _ := h.(*peer.Process)
	return p
}

// interleave samples every series at every size, in turn.
func (r *runner) interleave(ctx context.Context, ss []sampler, col *collector) error {
	o := r.o
	for _, size := range o.sizes {
		failed := map[string]bool{}
		for _, s := range ss {
			if s.warm != nil {
				c, cancel := r.step(ctx)
				err := s.warm(c, size)
				cancel()
				if err != nil {
					col.add(s.name, size, 0, sampled{}, err)
					failed[s.name] = true
				}
			}
		}
		for rep := 0; rep < o.reps; rep++ {
			for _, s := range ss {
				if failed[s.name] {
					continue
				}
				r.prog.Set("%s %s %s (sample %d/%d)", o.cmd, s.name, sizes.Format(size), rep+1, o.reps)
				c, cancel := r.step(ctx)
				out, err := s.sample(c, size)
				if err != nil && c.Err() != nil && ctx.Err() == nil {
					r.stalled(s.name, size, err)
				}
				cancel()
				col.add(s.name, size, 0, out, err)
				if err != nil {
					failed[s.name] = true
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
	}
	return nil
}

// stalled reports a sample that took its whole step (a wait that no
// error ended): the stacks of this process's goroutines go to stderr, once
// a command, to show what it waited for.
func (r *runner) stalled(series string, size int, err error) {
	fmt.Fprintf(r.stderr, "bench: %s at %s took its whole step (%v): %v\n", series, sizes.Format(size), 2*time.Minute+40*r.o.duration, err)
	if r.dumped {
		return
	}
	r.dumped = true
	buf := make([]byte, 4<<20)
	fmt.Fprintf(r.stderr, "bench: goroutines:\n%s\n", buf[:runtime.Stack(buf, true)])
}

// itersFor scales the round-trip count down above 64 KiB (as OSU does).
func itersFor(n, size int) int {
	if size <= 64<<10 {
		return n
	}
	return max(min(n, 10), n*(64<<10)/size)
}

// repIters is the number of timed round trips of one repetition at size.
func (o *options) repIters(size int) int { return max(1, itersFor(o.iters, size)/o.reps) }

// step bounds one measurement in time.
func (r *runner) step(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 2*time.Minute+40*r.o.duration)
}

// value is the figure a stream sample gives for the command.
func (r *runner) value(s raw.Sample) sampled {
	v := s.Rate()
	if r.o.cmd == "throughput" {
		v = s.MBps()
	}
	return sampled{xs: []float64{v}, ops: s.Messages}
}

// roundTrips is a round-trip sample of n timed and warm untimed round trips.
func roundTrips(xs []float64, warm int) sampled {
	return sampled{xs: xs, ops: int64(len(xs) + warm)}
}

// openBaselines sets up the baselines of the command for the placement
// and records their names as the result's baselines.
func (r *runner) openBaselines(ctx context.Context, res *report.Result) ([]sampler, error) {
	o := r.o
	same := o.placement == placeSame
	var names []string
	switch o.cmd {
	case "roundtrip":
		names = []string{raw.KindConn, raw.KindSys, raw.KindSysPoll}
		if same {
			names = []string{"chan"}
		}
	case "throughput", "rate":
		names = []string{"udp"}
		if same {
			names = []string{"chan"}
		}
		if o.cmd == "throughput" {
			names = append(names, "tcp")
		}
	}
	if r.verbsBaseline() {
		names = []string{"verbs"}
	}
	res.Baselines = names
	var out []sampler
	for _, n := range names {
		s, err := r.openBaseline(ctx, n)
		if err != nil {
			for _, b := range out {
				b.close()
			}
			return nil, fmt.Errorf("baseline %s: %w", n, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func (r *runner) openBaseline(ctx context.Context, name string) (sampler, error) {
	o := r.o
	host, err := r.baselineHost()
	if err != nil {
		return sampler{}, err
	}
	far := farProcess(host)
	s := sampler{name: name, close: func() { host.Close() }}
	if name == "verbs" {
		return r.openVerbs(ctx, s, host)
	}
	if o.cmd == "roundtrip" {
		switch name {
		case "chan":
			s.sample = func(ctx context.Context, size int) (sampled, error) {
				return metered(ctx, nil, func() (sampled, error) {
					xs, err := raw.ChanPingPong(ctx, size, o.warmup, o.repIters(size))
					return roundTrips(xs, o.warmup), err
				})
			}
		default:
			kind := name
			// The echo runs only during its sample: a polling echo
			// would otherwise spin through everyone else's.
			s.sample = func(ctx context.Context, size int) (sampled, error) {
				sock, err := raw.OpenDgram(kind)
				if err != nil {
					return sampled{}, err
				}
				addr, err := host.Start(ctx, peer.Job{Kind: kind + "-echo", Addr: raw.DgramAddr(sock), Size: size})
				if err != nil {
					raw.CloseDgram(sock)
					return sampled{}, err
				}
				defer host.Stop(ctx)
				return metered(ctx, far, func() (sampled, error) {
					xs, err := raw.DgramPingPong(ctx, sock, addr, size, o.warmup, o.repIters(size))
					return roundTrips(xs, o.warmup), err
				})
			}
		}
		return s, nil
	}
	var seq uint64
	switch name {
	case "chan":
		s.sample = func(ctx context.Context, size int) (sampled, error) {
			return metered(ctx, nil, func() (sampled, error) {
				smp, err := raw.ChanStream(ctx, size, o.window, o.duration)
				return r.value(smp), err
			})
		}
	case "udp":
		p, err := raw.OpenUDP()
		if err != nil {
			host.Close()
			return s, err
		}
		addr, err := host.Start(ctx, peer.Job{Kind: "udp-sink", Addr: p.LocalEndpoint().String()})
		if err != nil {
			p.Close()
			host.Close()
			return s, err
		}
		s.close = func() { host.Stop(context.Background()); p.Close(); host.Close() }
		to, err := p.ParseEndpoint(addr)
		if err != nil {
			s.close()
			return s, err
		}
		s.sample = func(ctx context.Context, size int) (sampled, error) {
			seq++
			return metered(ctx, far, func() (sampled, error) {
				smp, err := raw.Stream(ctx, p, to, size, o.duration, seq)
				return r.value(smp), err
			})
		}
	case "tcp":
		addr, err := host.Start(ctx, peer.Job{Kind: "tcp-sink", Size: o.maxSize()})
		if err != nil {
			host.Close()
			return s, err
		}
		s.close = func() { host.Stop(context.Background()); host.Close() }
		s.sample = func(ctx context.Context, size int) (sampled, error) {
			return metered(ctx, far, func() (sampled, error) {
				smp, err := raw.TCPStream(ctx, addr, size, o.duration)
				return r.value(smp), err
			})
		}
	}
	return s, nil
}

// openPcorSampler sets up the pcor series of one dispatcher mode. A
// blocking node stays up for the whole run (idle, it costs nothing); a
// polling node and its far side are opened for each sample.
func (r *runner) openPcorSampler(ctx context.Context, fabric, mode string) (sampler, error) {
	o := r.o
	sm := sampler{name: r.seriesName(fabric, mode)}
	kind := "pcor-sink"
	if o.cmd == "roundtrip" {
		kind = "pcor-echo"
	}
	var runOne func(ctx context.Context, s *pcorSide, size int) (sampled, error)
	run := func(ctx context.Context, s *pcorSide, size int) (sampled, error) {
		return r.withCounters(ctx, s, sizes.Format(size), func() (sampled, error) { return runOne(ctx, s, size) })
	}
	runOne = func(ctx context.Context, s *pcorSide, size int) (sampled, error) {
		if o.cmd == "roundtrip" {
			if mode == "polling" && o.warmup > 0 {
				if err := warmPolling(ctx, s.near, size); err != nil {
					return sampled{}, err
				}
			}
			return metered(ctx, farProcess(s.host), func() (sampled, error) {
				xs, err := s.near.RoundTrip(ctx, size, o.warmup, o.repIters(size))
				return roundTrips(xs, o.warmup), err
			})
		}
		if o.warmup > 0 {
			// A short untimed stream opens the path first.
			if _, err := s.near.Stream(ctx, size, o.window, time.Millisecond); err != nil {
				return sampled{}, err
			}
		}
		return metered(ctx, farProcess(s.host), func() (sampled, error) {
			smp, err := s.near.Stream(ctx, size, o.window, o.duration)
			return r.value(smp), err
		})
	}
	open := func(ctx context.Context) (*pcorSide, error) {
		s, err := r.openPcor(fabric, mode)
		if err != nil {
			return nil, err
		}
		if err := s.near.Connect(ctx, s.host, s.job(r, kind, o.maxSize())); err != nil {
			s.close()
			return nil, err
		}
		return s, nil
	}
	shut := func(s *pcorSide) {
		s.near.Disconnect(context.Background(), s.host)
		s.close()
	}
	if mode == "polling" {
		sm.close = func() {}
		sm.sample = func(ctx context.Context, size int) (sampled, error) {
			s, err := open(ctx)
			if err != nil {
				return sampled{}, err
			}
			defer shut(s)
			return run(ctx, s, size)
		}
		return sm, nil
	}
	s, err := open(ctx)
	if err != nil {
		return sm, err
	}
	sm.close = func() { shut(s) }
	sm.sample = func(ctx context.Context, size int) (sampled, error) { return run(ctx, s, size) }
	return sm, nil
}

// pollingWarm is how long a fresh polling node exchanges untimed round
// trips before its sample: its dispatcher polls the port for 10 ms
// without a datagram before it parks (pcor.Polling), and a sample of a
// few hundred round trips taken at once would time that start rather than the steady state (same process: 11.5 system calls a
// round trip against 0.1-0.4 in long runs).
const pollingWarm = 20 * time.Millisecond

// warmPolling runs untimed round trips of size for pollingWarm.
func warmPolling(ctx context.Context, n *pb.Near, size int) error {
	for start := time.Now(); time.Since(start) < pollingWarm; {
		if _, err := n.RoundTrip(ctx, size, 0, 50); err != nil {
			return err
		}
	}
	return nil
}

// contention measures the pcor series of many threads in one mode. The
// thread counts take turns within each repetition, so that a change of
// load over the run weighs on all of them alike (their ratio to the best
// count is the figure); each sample starts the job of its count afresh
// and, unless --warmup is 0, runs an untimed round of as many messages as
// the timed one first, which starts the job's threads and brings the new
// path to its steady state (a shorter one left the single thread, the
// usual best, at about twice its CPU time a message).
func (r *runner) contention(ctx context.Context, s *pcorSide, col *collector) error {
	o := r.o
	name := s.series()
	size := o.sizes[0]
	for rep := 0; rep < o.reps; rep++ {
		for _, n := range o.threads {
			r.prog.Set("contention %s %d threads (sample %d/%d)", name, n, rep+1, o.reps)
			out, err := r.contentionSample(ctx, s, n, size)
			col.add(name, size, n, out, err)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}

// contentionSample measures one round of n threads.
func (r *runner) contentionSample(ctx context.Context, s *pcorSide, n, size int) (out sampled, err error) {
	o := r.o
	j := s.job(r, "pcor-send", size)
	j.Threads = n
	if err := s.near.Connect(ctx, s.host, j); err != nil {
		return sampled{}, err
	}
	defer func() {
		if derr := s.near.Disconnect(ctx, s.host); err == nil && derr != nil {
			err = derr
		}
	}()
	c, cancel := r.step(ctx)
	defer cancel()
	if o.warmup > 0 {
		if _, err := s.near.Contention(c, s.host, n, max(1, o.iters/n), size); err != nil {
			return sampled{}, err
		}
	}
	per := max(1, o.iters/n)
	return r.withCounters(c, s, fmt.Sprintf("%d threads", n), func() (sampled, error) {
		return metered(c, farProcess(s.host), func() (sampled, error) {
			smp, err := s.near.Contention(c, s.host, n, per, size)
			return sampled{xs: []float64{smp.Rate()}, ops: smp.Messages}, err
		})
	})
}

// output writes the result in the chosen format, and the plot.
func output(o options, res *report.Result, w io.Writer) error {
	rs := []*report.Result{res}
	var err error
	switch {
	case o.json:
		err = report.WriteJSON(w, rs)
	case o.csv:
		err = report.WriteCSV(w, rs)
	default:
		err = report.WriteTable(w, res)
	}
	if err != nil {
		return err
	}
	if o.plot != "" {
		return writePlot(o.plot, rs)
	}
	return nil
}

func writePlot(path string, rs []*report.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteSVG(f, rs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// idle measures what a pair of nodes that exchanged a few messages burns
// while nothing more happens: CPU time over wall time of the busier of the
// two processes (for the same placement, of the one), in % of one CPU.
func (r *runner) idle(ctx context.Context, s *pcorSide, col *collector) error {
	o := r.o
	if err := s.near.Connect(ctx, s.host, s.job(r, "pcor-echo", 1)); err != nil {
		return err
	}
	defer s.near.Disconnect(context.Background(), s.host)
	if _, err := s.near.RoundTrip(ctx, 1, o.warmup, 10); err != nil {
		return err
	}
	// Let delayed acknowledgements and timers run out first.
	time.Sleep(50 * time.Millisecond)
	far := farProcess(s.host)
	for rep := 0; rep < o.reps; rep++ {
		r.prog.Set("idle %s (sample %d/%d)", s.series(), rep+1, o.reps)
		var f0, f1 usage.Counts
		var err error
		if far != nil {
			if f0, err = far.Usage(ctx); err != nil {
				return err
			}
		}
		s0, t0 := usage.Self(), time.Now()
		select {
		case <-time.After(o.duration):
		case <-ctx.Done():
			return ctx.Err()
		}
		s1, el := usage.Self(), time.Since(t0)
		pct := float64(s1.CPU-s0.CPU) / float64(el.Nanoseconds()) * 100
		if far != nil {
			if f1, err = far.Usage(ctx); err != nil {
				return err
			}
			pct = max(pct, float64(f1.CPU-f0.CPU)/float64(el.Nanoseconds())*100)
		}
		col.add(s.series(), 1, 0, sampled{xs: []float64{pct}}, nil)
	}
	return nil
}

// withCounters runs one pcor sample (at point: its size, or its thread
// count) and, with --progress, writes its median and what the counters of
// both nodes did meanwhile, retransmissions and BUSY answers among them
// (the far node's are those of the near node in the same-process
// placement).
func (r *runner) withCounters(ctx context.Context, s *pcorSide, point string, fn func() (sampled, error)) (sampled, error) {
	if !r.o.progress {
		return fn()
	}
	far := farProcess(s.host)
	read := func() (near, remote map[string]uint64) {
		near = pb.Counters(s.node)
		if far != nil {
			remote, _ = far.Counters(ctx)
		}
		return near, remote
	}
	n0, f0 := read()
	out, err := fn()
	n1, f1 := read()
	line := fmt.Sprintf("# %s %s: median %.4g %s over %d ops; near:%s", s.series(), point,
		median(out.xs), commands[r.o.cmd].unit, out.ops, counterDelta(n0, n1))
	if far != nil {
		line += "; far:" + counterDelta(f0, f1)
	}
	fmt.Fprintln(r.stderr, line)
	return out, err
}

// counterDelta formats what each counter grew by.
func counterDelta(a, b map[string]uint64) string {
	var out string
	for _, k := range pb.CounterNames {
		out += fmt.Sprintf(" %s %d", k, b[k]-a[k])
	}
	return out
}
