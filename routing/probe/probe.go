// Package probe measures the links of a pcor process for route pricing:
// round trips of a few message sizes to an echoing thread (active
// samples) and the times of blocking sends of real traffic (passive
// samples), recorded in a routing.Prices as one-way times.
package probe

import (
	"context"
	"errors"
	"time"

	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/routing"
)

// Tags of probe messages, and of the message that ends an Echo.
const (
	Tag     pcor.Tag = 0x5052 // "PR"
	TagStop pcor.Tag = 0x5053
)

// echoBurst is how long Echo keeps receiving probes with a Recv (which
// drives the port) after the last one came, before it waits outside the
// port's progress again.
const echoBurst = 100 * time.Millisecond

// Echo sends every probe that reaches th back to its sender, until a
// message tagged TagStop arrives or ctx ends (it then returns nil).
//
// Between bursts of probes it waits outside the port's progress (on
// Request.Done): a Recv counts as a waiter of the port for its first
// 20 ms, and while a thread waits the engine keeps the port with its
// dispatcher, so the process's own probes would come through the
// dispatcher and a thread wake-up (about 15 µs more one way on a veth
// pair: a link measured right after its process's Echo started was
// priced 25-120% slow). Once a probe came it receives the next ones with
// a Recv, which drives the port, until no probe has come for echoBurst.
// That Recv takes probes from any sender: one from a single sender left
// every other node's probes queued until that sender had been silent for
// echoBurst (a link measured right after another node measured its own
// link to the same Echo waited 100 ms for its first answer, and one
// measured while another node kept probing waited as long as that did).
func Echo(ctx context.Context, th *pcor.Thread) error {
	// handle answers m; stop reports TagStop, skip an error to pass over.
	handle := func(m pcor.Message, err error) (stop, skip bool, _ error) {
		if err == nil && m.Tag == TagStop {
			return true, false, nil
		}
		if err == nil && m.Tag != Tag {
			return false, true, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return true, false, nil
			}
			if errors.Is(err, pcor.ErrPeerDown) || errors.Is(err, pcor.ErrUnreachable) {
				return false, true, nil
			}
			return false, false, err
		}
		if err := th.Send(ctx, m.Src, Tag, m.Data); err != nil && ctx.Err() == nil &&
			!errors.Is(err, pcor.ErrPeerDown) && !errors.Is(err, pcor.ErrUnreachable) {
			return false, false, err
		}
		return false, false, nil
	}
	for {
		r := th.Irecv(pcor.Any, pcor.AnyTag, nil)
		select {
		case <-r.Done():
		case <-ctx.Done():
			r.Cancel()
			return nil
		}
		err := r.Wait(ctx)
		m := r.Message()
		stop, skip, err := handle(m, err)
		if stop || err != nil {
			return err
		}
		if skip {
			continue
		}
		for ctx.Err() == nil {
			bctx, cancel := context.WithTimeout(ctx, echoBurst)
			m2, err := th.Recv(bctx, pcor.Any, pcor.AnyTag)
			cancel()
			if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				break // the senders went silent
			}
			stop, skip, err := handle(m2, err)
			if stop || err != nil {
				return err
			}
			if skip {
				break
			}
		}
	}
}

// RoundTrip times one round trip of size bytes to the echo at peer.
func RoundTrip(ctx context.Context, th *pcor.Thread, peer pcor.Addr, buf []byte) (time.Duration, error) {
	t0 := time.Now()
	if err := th.Send(ctx, peer, Tag, buf); err != nil {
		return 0, err
	}
	if _, err := th.RecvInto(ctx, peer, Tag, buf); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// Measure times reps round trips of each size to the echo at peer, over
// link l (the route pcor takes to peer for these sizes), and records half
// of each as a one-way sample. The sizes take turns in blocks of at most
// five round trips: a block sees the link as a stream of that size does
// (a shaper's token bucket drained), and the turns spread drift in the
// machine's load over every size.
func Measure(ctx context.Context, th *pcor.Thread, peer pcor.Addr, l routing.Link, prices *routing.Prices, sizes []int, reps int) error {
	top := 0
	for _, s := range sizes {
		top = max(top, s)
	}
	buf := make([]byte, top)
	return prices.Measure(l, sizes, reps, func(size int) (time.Duration, error) {
		return RoundTrip(ctx, th, peer, buf[:size])
	})
}

// Sender sends on a thread and records each blocking send's time as a
// passive sample of its link. A blocking Send returns when the
// destination acknowledged the whole message, so it lasts the message's
// one-way time plus an acknowledgement's: the link's fitted fixed cost is
// taken off. Until the link has a fit no sample is recorded.
type Sender struct {
	Thread *pcor.Thread
	Prices *routing.Prices
	Link   routing.Link
}

// Send sends data to dst with tag (Thread.Send) and records its time
// (routing.Prices.ObserveSend).
func (s *Sender) Send(ctx context.Context, dst pcor.Addr, tag pcor.Tag, data []byte) error {
	t0 := time.Now()
	if err := s.Thread.Send(ctx, dst, tag, data); err != nil {
		return err
	}
	s.Prices.ObserveSend(s.Link, len(data), time.Since(t0))
	return nil
}
