package main

import (
	"context"
	"time"

	"github.com/pcor-go/pcor/bench/internal/raw"
	"github.com/pcor-go/pcor/bench/internal/report"
)

// With --fabric shm the pcor series are also compared with what the
// shared-memory fabric is to beat, sampled in turn with the others: pcor
// itself over UDP on loopback between two processes (series
// pcor-udp/MODE, one per --mode) and, for one-way throughput, a memmove of
// each message in this process (series memmove).

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
		out = append(out, r.memmoveSampler())
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
// --duration, single-threaded: the speed of one copy on this machine.
func (r *runner) memmoveSampler() sampler {
	o := r.o
	return sampler{name: "memmove", close: func() {}, sample: func(ctx context.Context, size int) (sampled, error) {
		return metered(ctx, nil, func() (sampled, error) {
			smp, err := memmove(ctx, size, o.duration)
			return r.value(smp), err
		})
	}}
}

// memmove copies size bytes from one buffer to another, over and over,
// for about d.
func memmove(ctx context.Context, size int, d time.Duration) (raw.Sample, error) {
	src, dst := make([]byte, size), make([]byte, size)
	for i := range src {
		src[i] = byte(i) // touched, so that every page is backed
	}
	copy(dst, src)
	var n int64
	start := time.Now()
	for time.Since(start) < d {
		for range 16 {
			copy(dst, src)
		}
		n += 16
		if err := ctx.Err(); err != nil {
			return raw.Sample{}, err
		}
	}
	return raw.Sample{Bytes: n * int64(size), Messages: n, Elapsed: time.Since(start)}, nil
}
