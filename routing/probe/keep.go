package probe

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/routing"
)

// Keeper keeps a live node's link prices measured: every Interval it
// times round trips of a few sizes to the echo thread of every member
// its routing table reaches directly, records them in the node's
// routing.Prices (the one given in its JoinConfig) for the link each
// size takes, and has the node reprice its routes (Node.Reprice), which
// rebuilds them when a fit drifted. Every member must run Echo on
// EchoThread. Links pinned in the Prices keep their pinned figures.
type Keeper struct {
	Node   *pcor.Node
	Prices *routing.Prices
	// EchoThread is the thread each member echoes probes on.
	EchoThread pcor.ThreadID
	// Sizes are the probe sizes (default 16 B, 4, 16 and 64 KiB), Reps the
	// round trips per size and round (default 5), Interval the time
	// between rounds (default 30 s).
	Sizes    []int
	Reps     int
	Interval time.Duration
}

var defaultSizes = []int{16, 4 << 10, 16 << 10, 64 << 10}

// linkTimeout bounds the measurement of one link in a round: a member
// that does not echo is passed over.
const linkTimeout = 10 * time.Second

// Run measures in rounds until ctx ends; it returns nil then. A member
// that leaves or cannot be reached during a round is passed over.
func (k *Keeper) Run(ctx context.Context) error {
	every := k.Interval
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := k.Round(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// Round measures every directly reached member once and reprices the
// node's routes; it returns the links repriced.
func (k *Keeper) Round(ctx context.Context) ([]routing.Link, error) {
	sizes := k.Sizes
	if len(sizes) == 0 {
		sizes = defaultSizes
	}
	reps := k.Reps
	if reps <= 0 {
		reps = 5
	}
	t := k.Node.Routes()
	if t == nil {
		return nil, errors.New("probe: the node has no routing table (made by Join or FromEnv?)")
	}
	th := k.Node.NewThread()
	for _, dst := range t.Destinations() {
		// The sizes each direct link carries (a destination may be
		// reached by several links, by message size).
		bySize := map[routing.Link][]int{}
		var links []routing.Link
		for _, s := range sizes {
			rt, ok := t.Lookup(dst, int64(s))
			if !ok || !rt.Direct() {
				continue
			}
			l := routing.Link{Peer: dst, Fabric: rt.Fabric, Network: rt.Network}
			if !slices.Contains(links, l) {
				links = append(links, l)
			}
			bySize[l] = append(bySize[l], s)
		}
		peer := pcor.Addr{Proc: pcor.ProcID(dst), Thread: k.EchoThread}
		for _, l := range links {
			if len(bySize[l]) < 2 {
				continue // a line needs two sizes
			}
			lctx, cancel := context.WithTimeout(ctx, linkTimeout)
			err := Measure(lctx, th, peer, l, k.Prices, bySize[l], reps)
			cancel()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, pcor.ErrPeerDown) || errors.Is(err, pcor.ErrUnreachable) || errors.Is(err, context.DeadlineExceeded) {
				continue // gone, or not echoing: passed over this round
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return k.Node.Reprice()
}
