package main

import (
	"context"

	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/bench/internal/raw"
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
