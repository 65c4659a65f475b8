package main

import (
	"context"
	"time"

	"github.com/pcor-go/pcor/bench/internal/pb"
	"github.com/pcor-go/pcor/bench/internal/raw"
	"github.com/pcor-go/pcor/bench/internal/report"
	"github.com/pcor-go/pcor/fabric/shm"
)

// With --fabric shm the pcor series are also compared with what the
// shared-memory fabric is to beat, sampled in turn with the others: pcor
// itself over UDP on loopback between two processes (series
// pcor-udp/MODE, one per --mode) and, for one-way throughput, memmove in
// this process: of each message from one buffer to another (series
// memmove; both stay in the CPU's caches up to a few MiB), and of each
// message into the next of as many buffers as the stream's sink keeps
// receives posted (series memmove-spread: for large messages far more
// memory than the caches hold, where the sink posts them all into one
// buffer; from memory allocated as the sink's, shm.Alloc).

// openShmBaselines sets up those baselines and adds their names to the
// result's; it does nothing for another fabric or command.
func (r *runner) openShmBaselines(ctx context.Context, res *report.Result) ([]sampler, error) {
	o := r.o
	if o.fabric != "shm" || o.placement != placeProcs {
		return nil, nil
	}
	var out []sampler
	switch o.cmd {
	case "throughput":
		out = append(out, r.memmoveSampler("memmove", 1), r.memmoveSampler("memmove-spread", 0))
	case "roundtrip", "rate":
	default:
		return nil, nil
	}
	for _, mode := range o.modes {
		s, err := r.openPcorSampler(ctx, "udp", mode)
		if err != nil {
			for _, b := range out {
				b.close()
			}
			return nil, err
		}
		out = append(out, s)
	}
	for _, s := range out {
		res.Baselines = append(res.Baselines, s.name)
	}
	return out, nil
}

// memmoveSampler copies a message of each size into another buffer for
// --duration, single-threaded: the speed of one copy on this machine. It
// copies into bufs buffers in turn, or with bufs 0 into as many as the
// stream's sink posts receives (pb.SinkDepth), allocated as pcor's are
// (shm.Alloc: huge pages from 2 MiB). The buffers of a size are made and
// touched before its first sample, outside the measure, and kept for its
// other samples, as the sink keeps its own.
func (r *runner) memmoveSampler(name string, bufs int) sampler {
	o := r.o
	var c copier
	return sampler{name: name, close: func() { c = copier{} }, sample: func(ctx context.Context, size int) (sampled, error) {
		if c.size != size || c.src == nil {
			n, alloc := bufs, func(n int) []byte { return make([]byte, n) }
			if n == 0 {
				n, alloc = pb.SinkDepth(o.window, size), shm.Alloc
			}
			c = copier{} // the last size's buffers go first
			c = newCopier(size, n, alloc)
		}
		return metered(ctx, nil, func() (sampled, error) {
			smp, err := c.run(ctx, o.duration)
			return r.value(smp), err
		})
	}}
}

// copier copies a source buffer into each of its destinations in turn.
type copier struct {
	size int
	src  []byte
	dst  [][]byte
}

func newCopier(size, bufs int, alloc func(int) []byte) copier {
	c := copier{size: size, src: alloc(size), dst: make([][]byte, bufs)}
	for i := range c.src {
		c.src[i] = byte(i) // touched, so that every page is backed
	}
	for i := range c.dst {
		c.dst[i] = alloc(size)
		copy(c.dst[i], c.src)
	}
	return c
}

// run copies over and over for about d.
func (c *copier) run(ctx context.Context, d time.Duration) (raw.Sample, error) {
	var n int64
	start := time.Now()
	for time.Since(start) < d {
		for range 16 {
			copy(c.dst[n%int64(len(c.dst))], c.src)
			n++
		}
		if err := ctx.Err(); err != nil {
			return raw.Sample{}, err
		}
	}
	return raw.Sample{Bytes: n * int64(c.size), Messages: n, Elapsed: time.Since(start)}, nil
}
