package probe

import (
	"context"
	"errors"
	"time"

	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/routing"
)

// Keeper keeps a live node's link prices measured with sizes, repetitions
// and an interval of its own: every Interval it times round trips of a
// few sizes to the echo thread of every member its routing table reaches
// directly, records them in the node's routing.Prices (the one given in
// its JoinConfig) for the link each size takes, and has the node reprice
// its routes (Node.Reprice), which rebuilds them when a fit drifted.
// Links pinned in the Prices keep their pinned figures. Every node made
// by pcor.Join echoes on pcor.PriceThread; a node whose
// JoinConfig.PriceEvery is positive (the default of pcor.FromEnv) keeps
// its prices by itself, without a Keeper.
type Keeper struct {
	Node   *pcor.Node
	Prices *routing.Prices
	// EchoThread is the thread each member echoes probes on:
	// pcor.PriceThread, or one that runs Echo.
	EchoThread pcor.ThreadID
	// Sizes are the probe sizes (default 16 B, 4, 16 and 64 KiB), Reps the
	// round trips per size and round (default 5), Interval the time
	// between rounds (default 30 s).
	Sizes    []int
	Reps     int
	Interval time.Duration
}

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
		sizes = routing.ProbeSizes
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
	for _, ls := range t.DirectLinks(sizes) {
		peer := pcor.Addr{Proc: pcor.ProcID(ls.Link.Peer), Thread: k.EchoThread}
		lctx, cancel := context.WithTimeout(ctx, linkTimeout)
		err := Measure(lctx, th, peer, ls.Link, k.Prices, ls.Sizes, reps)
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
	return k.Node.Reprice()
}
