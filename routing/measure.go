package routing

import (
	"slices"
	"time"
)

// ProbeSizes are the message sizes a link is measured at by default.
var ProbeSizes = []int{16, 4 << 10, 16 << 10, 64 << 10}

// LinkSizes is a link the local process reaches a member by directly,
// with the probe sizes its routes send over it.
type LinkSizes struct {
	Link  Link
	Sizes []int
}

// DirectLinks returns, for every reachable member, the links its direct
// routes take for messages of the given sizes, each with the sizes it
// carries, by member then in order of size. Links that carry fewer than
// two of the sizes are left out: a line needs two.
func (t *Table) DirectLinks(sizes []int) []LinkSizes {
	var out []LinkSizes
	for _, dst := range t.Destinations() {
		first := len(out)
		for _, s := range sizes {
			rt, ok := t.Lookup(dst, int64(s))
			if !ok || !rt.Direct() {
				continue
			}
			l := Link{Peer: dst, Fabric: rt.Fabric, Network: rt.Network}
			i := slices.IndexFunc(out[first:], func(ls LinkSizes) bool { return ls.Link == l })
			if i < 0 {
				out = append(out, LinkSizes{Link: l})
				i = len(out) - first - 1
			}
			out[first+i].Sizes = append(out[first+i].Sizes, s)
		}
	}
	return slices.DeleteFunc(out, func(ls LinkSizes) bool { return len(ls.Sizes) < 2 })
}

// Measure times reps round trips of each size over link l with
// roundTrip and records half of each as a one-way sample. The sizes take
// turns in blocks of at most five timed round trips: a block sees the
// link as a stream of that size does (a shaper's token bucket drained),
// and the turns spread drift in the machine's load over every size. As
// bench warms up before it times, a first turn goes untimed (a new
// link's first round trips pay for its buffers, pages and the peer's
// start), and so does the first round trip of each block (it pays for
// the size before it: a shaper's bucket left empty by larger messages,
// acknowledgements of the last block). It stops at the first error.
func (p *Prices) Measure(l Link, sizes []int, reps int, roundTrip func(size int) (time.Duration, error)) error {
	for done, warm := 0, true; done < reps; warm = false {
		block := min(5, reps-done)
		for _, s := range sizes {
			for i := range block + 1 {
				d, err := roundTrip(s)
				if err != nil {
					return err
				}
				if !warm && i > 0 {
					p.Observe(l, s, d/2)
				}
			}
		}
		if !warm {
			done += block
		}
	}
	return nil
}

// ObserveSend records a blocking send of size bytes over link l that
// took d, as a passive sample. Such a send returns once the destination
// acknowledged the whole message, so it lasts the message's one-way time
// plus an acknowledgement's way back: the link's fitted fixed cost is
// taken off, but no more than half of d (an acknowledgement travels no
// slower than the message it acknowledges; a link that became faster
// than its fit must still be sampled). Until the link has a fit nothing
// is recorded.
func (p *Prices) ObserveSend(l Link, size int, d time.Duration) {
	fit, ok := p.Fit(l)
	if !ok {
		return
	}
	ack := min(time.Duration(max(fit.Coef[0], 0)*1e9), d/2)
	p.Observe(l, size, d-ack)
}
