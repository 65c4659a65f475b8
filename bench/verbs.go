package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/bench/internal/raw"
	"github.com/pcor-go/pcor/bench/internal/sizes"
)

// verbsNote explains the raw verbs baseline of each command.
var verbsNote = map[string]string{
	"roundtrip":  "verbs: raw RC SEND/RECV ping-pong between the two processes on the same RDMA device, busy-polling (ib_send_lat analogue)",
	"throughput": "verbs: raw RDMA WRITE stream into the other process's memory on the same RDMA device, window outstanding, busy-polling (ib_write_bw analogue)",
	"rate":       "verbs: raw RDMA WRITE stream into the other process's memory on the same RDMA device, window outstanding, busy-polling (ib_write_bw analogue)",
}

// verbsBaseline reports whether the two-process baseline of this run is
// raw verbs: pcor runs over RDMA between two processes.
func (r *runner) verbsBaseline() bool {
	return r.o.fabric == "rdma" && r.o.placement == placeProcs
}

// openVerbs sets up the raw verbs baseline with its far side on host.
// Round trips start an echo per sample, as the UDP ping-pong does; a
// stream keeps one write target for the whole run (it costs the far
// process nothing between samples).
func (r *runner) openVerbs(ctx context.Context, s sampler, host peer.Host) (sampler, error) {
	o := r.o
	if o.cmd == "roundtrip" {
		s.sample = func(ctx context.Context, size int) (sampled, error) {
			return metered(ctx, farProcess(host), func() (sampled, error) {
				xs, err := raw.VerbsPingPong(ctx, host, size, o.warmup, o.repIters(size))
				return roundTrips(xs, o.warmup), err
			})
		}
		return s, nil
	}
	st, err := raw.OpenVerbsStream(ctx, host, o.maxSize(), o.window)
	if err != nil {
		host.Close()
		return s, err
	}
	s.close = func() { st.Close(); host.Close() }
	s.sample = func(ctx context.Context, size int) (sampled, error) {
		return metered(ctx, farProcess(host), func() (sampled, error) {
			smp, err := st.Sample(ctx, size, o.duration)
			return r.value(smp), err
		})
	}
	return s, nil
}

// pairedNotes gives, for each pcor series at each size, the ratio of each
// of its repetitions to the repetition of the verbs baseline sampled next
// to it, in the same turn of interleave: their median and range. A load
// that comes and goes on the host weighs on both figures of each such
// ratio, where the ratio of the two series' medians may pair samples
// taken a minute apart (in the soft-RoCE guest the verbs ping-pong's own
// repetitions spread by several times under load).
func (c *collector) pairedNotes(base string) []string {
	var notes []string
	bs := c.pts[base]
	if bs == nil {
		return nil
	}
	for _, s := range c.order {
		if s == base || !strings.HasPrefix(s, "pcor/") {
			continue
		}
		for _, k := range c.keys[s] {
			e, b := c.pts[s][k], bs[k]
			if e == nil || b == nil {
				continue
			}
			var rs []float64
			for i := 0; i < len(e.reps) && i < len(b.reps); i++ {
				if b.reps[i] > 0 {
					rs = append(rs, e.reps[i]/b.reps[i])
				}
			}
			if len(rs) == 0 {
				continue
			}
			slices.Sort(rs)
			notes = append(notes, fmt.Sprintf("paired %s/%s at %s: median %.2fx, range [%.2f, %.2f], %d repetitions",
				s, base, sizes.Format(k[0]), median(rs), rs[0], rs[len(rs)-1], len(rs)))
		}
	}
	return notes
}
