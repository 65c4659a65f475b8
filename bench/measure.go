package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/bench/internal/raw"
	"github.com/pcor-go/pcor/bench/internal/report"
	"github.com/pcor-go/pcor/bench/internal/sizes"
	"github.com/pcor-go/pcor/fabric/rdma"
)

// measure runs one command and returns its result.
//
// Round trips, streams and rates are interleaved: at each size every series
// (the baselines, then pcor) takes a sample in turn, so a load that comes
// and goes on the machine weighs on all of them alike and the ratios of
// medians stay fair. The baselines run during the first dispatcher mode.
func measure(ctx context.Context, o options, stderr io.Writer) (*report.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if o.fabric == "rdma" {
		if _, err := rdma.FindDevice("", ""); err != nil {
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
	var base []sampler
	if o.baselines && o.cmd != "contention" {
		base, err = r.openBaselines(ctx, res)
		defer func() {
			for _, b := range base {
				b.close()
			}
		}()
		if err != nil {
			return nil, err
		}
	}
	for i, mode := range o.modes {
		s, err := r.openPcor(mode)
		if err != nil {
			return nil, err
		}
		if o.cmd == "contention" {
			err = r.contention(ctx, s, col)
		} else {
			series := []sampler{}
			if i == 0 {
				series = append(series, base...)
			}
			var pc sampler
			if pc, err = r.openPcorSampler(ctx, s); err == nil {
				err = r.interleave(ctx, append(series, pc), col)
				pc.close()
			}
		}
		s.close()
		if err != nil {
			return nil, err
		}
	}
	col.into(res)
	if o.fabric != "udp" && o.baselines && o.cmd != "contention" {
		if r.verbsBaseline() {
			res.Notes = append(res.Notes, verbsNote[o.cmd])
		} else {
			res.Notes = append(res.Notes, "the same-process baselines do not use the pcor fabric")
		}
	}
	if len(o.modes) > 1 && len(base) > 0 {
		res.Notes = append(res.Notes, "baselines sampled in turn with pcor/"+o.modes[0]+"; later modes are compared with those medians")
	}
	if o.cmd == "roundtrip" {
		res.Notes = append(res.Notes, fmt.Sprintf("%d timed round trips per size up to 64K, fewer above; %d warm-up", o.iters, o.warmup))
	} else {
		res.Notes = append(res.Notes, fmt.Sprintf("%d samples per point; window %d", o.reps, o.window))
	}
	res.Finish()
	return res, nil
}

// collector gathers samples per series and size in order of first sight.
type collector struct {
	order []string
	keys  map[string][][2]int
	xs    map[string]map[[2]int][]float64
	errs  map[string]map[[2]int]error
}

func newCollector() *collector {
	return &collector{keys: map[string][][2]int{}, xs: map[string]map[[2]int][]float64{}, errs: map[string]map[[2]int]error{}}
}

func (c *collector) add(series string, size, threads int, xs []float64, err error) {
	k := [2]int{size, threads}
	if c.xs[series] == nil {
		c.order = append(c.order, series)
		c.xs[series] = map[[2]int][]float64{}
		c.errs[series] = map[[2]int]error{}
	}
	if _, seen := c.xs[series][k]; !seen {
		c.keys[series] = append(c.keys[series], k)
	}
	c.xs[series][k] = append(c.xs[series][k], xs...)
	if err != nil && c.errs[series][k] == nil {
		c.errs[series][k] = err
	}
}

func (c *collector) into(res *report.Result) {
	for _, s := range c.order {
		for _, k := range c.keys[s] {
			err := c.errs[s][k]
			xs := c.xs[s][k]
			if err != nil && len(xs) > 0 {
				res.Notes = append(res.Notes, fmt.Sprintf("%s at %s: %d samples kept after: %v", s, sizes.Format(k[0]), len(xs), err))
				err = nil
			}
			res.AddSamples(s, k[0], k[1], xs, err)
		}
	}
}

// sampler is one series: a sample at a size is one or more values
// (round-trip times, or one MB/s or msg/s figure).
type sampler struct {
	name   string
	warm   func(ctx context.Context, size int) error // may be nil
	sample func(ctx context.Context, size int) ([]float64, error)
	close  func()
}

// interleave samples every series at every size, in turn.
func (r *runner) interleave(ctx context.Context, ss []sampler, col *collector) error {
	o := r.o
	reps := o.reps
	if o.cmd == "roundtrip" {
		reps = 1
	}
	for _, size := range o.sizes {
		failed := map[string]bool{}
		for _, s := range ss {
			if s.warm != nil {
				c, cancel := r.step(ctx)
				err := s.warm(c, size)
				cancel()
				if err != nil {
					col.add(s.name, size, 0, nil, err)
					failed[s.name] = true
				}
			}
		}
		for rep := 0; rep < reps; rep++ {
			for _, s := range ss {
				if failed[s.name] {
					continue
				}
				r.prog.Set("%s %s %s (sample %d/%d)", o.cmd, s.name, sizes.Format(size), rep+1, reps)
				c, cancel := r.step(ctx)
				xs, err := s.sample(c, size)
				cancel()
				col.add(s.name, size, 0, xs, err)
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

// itersFor scales the round-trip count down above 64 KiB (as OSU does).
func itersFor(n, size int) int {
	if size <= 64<<10 {
		return n
	}
	return max(min(n, 10), n*(64<<10)/size)
}

// step bounds one measurement in time.
func (r *runner) step(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 2*time.Minute+40*r.o.duration)
}

// value is the figure a stream sample gives for the command.
func (r *runner) value(s raw.Sample) []float64 {
	if r.o.cmd == "throughput" {
		return []float64{s.MBps()}
	}
	return []float64{s.Rate()}
}

// openBaselines sets up the baselines of the command for the placement
// and records their names as the result's baselines.
func (r *runner) openBaselines(ctx context.Context, res *report.Result) ([]sampler, error) {
	o := r.o
	same := o.placement == placeSame
	var names []string
	switch o.cmd {
	case "roundtrip":
		names = []string{"udp"}
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
			return out, fmt.Errorf("baseline %s: %w", n, err)
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
	s := sampler{name: name, close: func() { host.Close() }}
	if name == "verbs" {
		return r.openVerbs(ctx, s, host)
	}
	if o.cmd == "roundtrip" {
		switch name {
		case "chan":
			s.sample = func(ctx context.Context, size int) ([]float64, error) {
				return raw.ChanPingPong(ctx, size, o.warmup, itersFor(o.iters, size))
			}
		case "udp":
			p, err := raw.OpenUDP()
			if err != nil {
				host.Close()
				return s, err
			}
			s.close = func() { p.Close(); host.Close() }
			s.sample = func(ctx context.Context, size int) ([]float64, error) {
				addr, err := host.Start(ctx, peer.Job{Kind: "udp-echo", Addr: p.LocalEndpoint().String(), Size: size})
				if err != nil {
					return nil, err
				}
				defer host.Stop(ctx)
				to, err := p.ParseEndpoint(addr)
				if err != nil {
					return nil, err
				}
				return raw.PingPong(ctx, p, to, size, o.warmup, itersFor(o.iters, size))
			}
		}
		return s, nil
	}
	var seq uint64
	switch name {
	case "chan":
		s.sample = func(ctx context.Context, size int) ([]float64, error) {
			smp, err := raw.ChanStream(ctx, size, o.window, o.duration)
			return r.value(smp), err
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
		s.sample = func(ctx context.Context, size int) ([]float64, error) {
			seq++
			smp, err := raw.Stream(ctx, p, to, size, o.duration, seq)
			return r.value(smp), err
		}
	case "tcp":
		addr, err := host.Start(ctx, peer.Job{Kind: "tcp-sink", Size: o.maxSize()})
		if err != nil {
			host.Close()
			return s, err
		}
		s.close = func() { host.Stop(context.Background()); host.Close() }
		s.sample = func(ctx context.Context, size int) ([]float64, error) {
			smp, err := raw.TCPStream(ctx, addr, size, o.duration)
			return r.value(smp), err
		}
	}
	return s, nil
}

// openPcorSampler connects the pcor side to its far job for the command.
func (r *runner) openPcorSampler(ctx context.Context, s *pcorSide) (sampler, error) {
	o := r.o
	sm := sampler{name: s.series()}
	kind := "pcor-sink"
	if o.cmd == "roundtrip" {
		kind = "pcor-echo"
	}
	if err := s.near.Connect(ctx, s.host, s.job(r, kind, o.maxSize())); err != nil {
		return sm, err
	}
	sm.close = func() { s.near.Disconnect(context.Background(), s.host) }
	if o.cmd == "roundtrip" {
		sm.sample = func(ctx context.Context, size int) ([]float64, error) {
			return s.near.RoundTrip(ctx, size, o.warmup, itersFor(o.iters, size))
		}
		return sm, nil
	}
	if o.warmup > 0 {
		// A short untimed stream opens the path first.
		sm.warm = func(ctx context.Context, size int) error {
			_, err := s.near.Stream(ctx, size, o.window, time.Millisecond)
			return err
		}
	}
	sm.sample = func(ctx context.Context, size int) ([]float64, error) {
		smp, err := s.near.Stream(ctx, size, o.window, o.duration)
		return r.value(smp), err
	}
	return sm, nil
}

// contention measures the pcor series of many threads in one mode.
func (r *runner) contention(ctx context.Context, s *pcorSide, col *collector) error {
	o := r.o
	name := s.series()
	size := o.sizes[0]
	for _, n := range o.threads {
		j := s.job(r, "pcor-send", size)
		j.Threads = n
		if err := s.near.Connect(ctx, s.host, j); err != nil {
			return err
		}
		per := max(1, o.iters/n)
		var err error
		for rep := 0; rep < o.reps && err == nil; rep++ {
			r.prog.Set("contention %s %d threads (sample %d/%d)", name, n, rep+1, o.reps)
			c, cancel := r.step(ctx)
			var smp raw.Sample
			smp, err = s.near.Contention(c, s.host, n, per, size)
			cancel()
			if err == nil {
				col.add(name, size, n, []float64{smp.Rate()}, nil)
			} else {
				col.add(name, size, n, nil, err)
			}
		}
		if derr := s.near.Disconnect(ctx, s.host); err == nil && derr != nil {
			return derr
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
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
