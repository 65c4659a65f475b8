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
	"github.com/pcor-go/pcor/fabric/udp"
)

// measure runs one command and returns its result.
func measure(ctx context.Context, o options, stderr io.Writer) (*report.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	r, err := newRunner(o, stderr)
	if err != nil {
		return nil, err
	}
	defer r.close()
	res := &report.Result{Command: o.cmd, Placement: o.placement, Fabric: o.fabric, Unit: commands[o.cmd].unit}
	if o.baselines {
		if err := r.baselines(ctx, res); err != nil {
			return nil, err
		}
	}
	for _, mode := range o.modes {
		s, err := r.openPcor(mode)
		if err != nil {
			return nil, err
		}
		err = r.pcor(ctx, s, res)
		s.close()
		if err != nil {
			return nil, err
		}
	}
	if o.fabric != "udp" && o.baselines {
		res.Notes = append(res.Notes, "the raw baselines run over UDP and TCP whatever the pcor fabric")
	}
	if o.cmd == "roundtrip" {
		res.Notes = append(res.Notes, fmt.Sprintf("%d timed round trips per size up to 64K, fewer above; %d warm-up", o.iters, o.warmup))
	} else {
		res.Notes = append(res.Notes, fmt.Sprintf("%d samples per point; window %d", o.reps, o.window))
	}
	res.Finish()
	return res, nil
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

// baselines measures the baselines of the command for the placement.
func (r *runner) baselines(ctx context.Context, res *report.Result) error {
	o := r.o
	host := r.baselineHost()
	if r.proc == nil {
		defer host.Close()
	}
	same := o.placement == placeSame
	switch o.cmd {
	case "roundtrip":
		if same {
			res.Baselines = []string{"chan"}
			for _, size := range o.sizes {
				r.prog.Set("roundtrip chan %s", sizes.Format(size))
				c, cancel := r.step(ctx)
				us, err := raw.ChanPingPong(c, size, o.warmup, itersFor(o.iters, size))
				cancel()
				res.AddSamples("chan", size, 0, us, err)
			}
			return ctx.Err()
		}
		res.Baselines = []string{"udp"}
		p, err := raw.OpenUDP()
		if err != nil {
			return err
		}
		defer p.Close()
		for _, size := range o.sizes {
			r.prog.Set("roundtrip udp %s", sizes.Format(size))
			c, cancel := r.step(ctx)
			us, err := r.udpPingPong(c, host, p, size)
			cancel()
			res.AddSamples("udp", size, 0, us, err)
		}
		return ctx.Err()
	case "throughput", "rate":
		first := "udp"
		if same {
			first = "chan"
		}
		res.Baselines = []string{first}
		if o.cmd == "throughput" {
			res.Baselines = append(res.Baselines, "tcp")
		}
		for _, b := range res.Baselines {
			if err := r.streamBaseline(ctx, host, b, res); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *runner) udpPingPong(ctx context.Context, host peer.Host, p *udp.Port, size int) ([]float64, error) {
	addr, err := host.Start(ctx, peer.Job{Kind: "udp-echo", Addr: p.LocalEndpoint().String(), Size: size})
	if err != nil {
		return nil, err
	}
	defer host.Stop(ctx)
	to, err := p.ParseEndpoint(addr)
	if err != nil {
		return nil, err
	}
	return raw.PingPong(ctx, p, to, size, r.o.warmup, itersFor(r.o.iters, size))
}

// value is the figure a sample gives for the command.
func (r *runner) value(s raw.Sample) float64 {
	if r.o.cmd == "throughput" {
		return s.MBps()
	}
	return s.Rate()
}

// streamBaseline measures one stream baseline (chan, udp or tcp) at every
// size, o.reps samples each.
func (r *runner) streamBaseline(ctx context.Context, host peer.Host, name string, res *report.Result) error {
	o := r.o
	var sample func(ctx context.Context, size int, seq uint64) (raw.Sample, error)
	switch name {
	case "chan":
		sample = func(ctx context.Context, size int, _ uint64) (raw.Sample, error) {
			return raw.ChanStream(ctx, size, o.window, o.duration)
		}
	case "udp":
		p, err := raw.OpenUDP()
		if err != nil {
			return err
		}
		defer p.Close()
		addr, err := host.Start(ctx, peer.Job{Kind: "udp-sink", Addr: p.LocalEndpoint().String()})
		if err != nil {
			return err
		}
		defer host.Stop(ctx)
		to, err := p.ParseEndpoint(addr)
		if err != nil {
			return err
		}
		sample = func(ctx context.Context, size int, seq uint64) (raw.Sample, error) {
			return raw.Stream(ctx, p, to, size, o.duration, seq)
		}
	case "tcp":
		addr, err := host.Start(ctx, peer.Job{Kind: "tcp-sink", Size: o.maxSize()})
		if err != nil {
			return err
		}
		defer host.Stop(ctx)
		sample = func(ctx context.Context, size int, _ uint64) (raw.Sample, error) {
			return raw.TCPStream(ctx, addr, size, o.duration)
		}
	}
	seq := uint64(0)
	for _, size := range o.sizes {
		var xs []float64
		var err error
		for rep := 0; rep < o.reps && err == nil; rep++ {
			r.prog.Set("%s %s %s (sample %d/%d)", o.cmd, name, sizes.Format(size), rep+1, o.reps)
			c, cancel := r.step(ctx)
			var s raw.Sample
			seq++
			s, err = sample(c, size, seq)
			cancel()
			if err == nil {
				xs = append(xs, r.value(s))
			}
		}
		res.AddSamples(name, size, 0, xs, err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// pcor measures the pcor series of the command in one dispatcher mode.
func (r *runner) pcor(ctx context.Context, s *pcorSide, res *report.Result) error {
	o := r.o
	name := s.series()
	switch o.cmd {
	case "roundtrip":
		if err := s.near.Connect(ctx, s.host, s.job(r, "pcor-echo", o.maxSize())); err != nil {
			return err
		}
		defer s.near.Disconnect(ctx, s.host)
		for _, size := range o.sizes {
			r.prog.Set("roundtrip %s %s", name, sizes.Format(size))
			c, cancel := r.step(ctx)
			us, err := s.near.RoundTrip(c, size, o.warmup, itersFor(o.iters, size))
			cancel()
			res.AddSamples(name, size, 0, us, err)
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
		}
	case "throughput", "rate":
		if err := s.near.Connect(ctx, s.host, s.job(r, "pcor-sink", o.maxSize())); err != nil {
			return err
		}
		defer s.near.Disconnect(ctx, s.host)
		for _, size := range o.sizes {
			var xs []float64
			var err error
			if o.warmup > 0 {
				// A short untimed stream opens the path first.
				c, cancel := r.step(ctx)
				_, err = s.near.Stream(c, size, o.window, time.Millisecond)
				cancel()
			}
			for rep := 0; rep < o.reps && err == nil; rep++ {
				r.prog.Set("%s %s %s (sample %d/%d)", o.cmd, name, sizes.Format(size), rep+1, o.reps)
				c, cancel := r.step(ctx)
				var smp raw.Sample
				smp, err = s.near.Stream(c, size, o.window, o.duration)
				cancel()
				if err == nil {
					xs = append(xs, r.value(smp))
				}
			}
			res.AddSamples(name, size, 0, xs, err)
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
		}
	case "contention":
		size := o.sizes[0]
		for _, n := range o.threads {
			j := s.job(r, "pcor-send", size)
			j.Threads = n
			if err := s.near.Connect(ctx, s.host, j); err != nil {
				return err
			}
			per := max(1, o.iters/n)
			var xs []float64
			var err error
			for rep := 0; rep < o.reps && err == nil; rep++ {
				r.prog.Set("contention %s %d threads (sample %d/%d)", name, n, rep+1, o.reps)
				c, cancel := r.step(ctx)
				var smp raw.Sample
				smp, err = s.near.Contention(c, s.host, n, per, size)
				cancel()
				if err == nil {
					xs = append(xs, smp.Rate())
				}
			}
			res.AddSamples(name, size, n, xs, err)
			if derr := s.near.Disconnect(ctx, s.host); err == nil && derr != nil {
				return derr
			}
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
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
