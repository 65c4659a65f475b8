package pcor

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pcor-go/pcor/internal/engine"
	"github.com/pcor-go/pcor/routing"
)

// PriceThread is the thread on which every node made by Join or FromEnv
// answers link probes: it sends each message that reaches it back to its
// sender, with its tag. routing/probe measures a link against it.
const PriceThread ThreadID = AnyThread - 1

// DefaultPriceEvery is the time between two measurements of a node's
// links when PCOR_PRICES does not say otherwise (FromEnv).
const DefaultPriceEvery = 30 * time.Second

// Link measurement by a node that keeps its prices (JoinConfig.PriceEvery).
const (
	priceTag     Tag = 0x5052 // the probes' tag (routing/probe's)
	priceReps        = 5      // round trips per size and round
	priceTimeout     = 10 * time.Second
	priceFirst       = time.Second // the first round, after Join
	echoBurst        = 100 * time.Millisecond
	// passiveEvery: one blocking send in passiveEvery is a passive
	// sample (a sample costs about half a microsecond, a send over
	// loopback 15 µs or more).
	passiveEvery = 8
	// priceProber is the thread a node measures its links from.
	priceProber = PriceThread - 1
)

// pricer measures a node's links in the background and answers the
// probes of the other members.
type pricer struct {
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu  sync.Mutex // one measurement at a time, on thread priceProber
	buf []byte
}

// startPricer starts the echo on PriceThread and, when every is positive
// (and the node has Prices), the rounds of measurement.
func (n *Node) startPricer(every time.Duration) {
	ctx, stop := context.WithCancel(context.Background())
	p := &pricer{stop: stop, buf: make([]byte, routing.ProbeSizes[len(routing.ProbeSizes)-1])}
	n.pricer = p
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		n.echoProbes(ctx)
	}()
	if every <= 0 || n.mem.prices == nil {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		n.keepPrices(ctx, every)
	}()
}

// close stops the pricer's goroutines and waits for them.
func (p *pricer) close() {
	p.stop()
	p.wg.Wait()
}

// echoProbes sends every message that reaches PriceThread back to its
// sender until ctx ends. Between rounds it waits outside the port's
// progress (engine.Request.Done): a Recv blocked for the node's whole
// life would count as one of the port's waiters, and the application's
// threads could no longer take the port from the dispatcher. Such a wait
// costs a probe up to the dispatcher's grace (a millisecond), so once a
// probe came the echo receives the next ones, from any sender, with a Recv,
// which drives the port, until no probe has come for echoBurst: a round
// opens with an untimed round trip. A node that probes while another does
// is answered at once, not after the other's burst.
func (n *Node) echoProbes(ctx context.Context) {
	ep := n.eng.Endpoint(engine.ThreadID(PriceThread))
	buf := make([]byte, routing.ProbeSizes[len(routing.ProbeSizes)-1])
	reply := func(r *engine.Request) {
		src, th := r.Source()
		sctx, cancel := context.WithTimeout(ctx, priceTimeout)
		ep.Send(sctx, src, th, r.Tag(), r.Data())
		cancel()
	}
	for {
		r := ep.Irecv(engine.AnyProc, engine.AnyThread, engine.AnyTag, buf)
		select {
		case <-r.Done():
		case <-ctx.Done():
			r.Cancel()
			return
		}
		if r.Err() != nil {
			if ctx.Err() != nil || n.closed.Load() {
				return
			}
			continue // truncated, or its sender gone
		}
		reply(r)
		for ctx.Err() == nil {
			bctx, cancel := context.WithTimeout(ctx, echoBurst)
			r, err := ep.Recv(bctx, engine.AnyProc, engine.AnyThread, engine.AnyTag, buf)
			cancel()
			if err != nil {
				break
			}
			reply(r)
		}
	}
}

// keepPrices measures the node's direct links every about every (±10%,
// so the members of a job do not all measure at once), the first time
// soon after Join, and reprices its routes, until ctx ends.
func (n *Node) keepPrices(ctx context.Context, every time.Duration) {
	wait := min(priceFirst, every)
	for {
		t := time.NewTimer(wait + time.Duration(rand.Int64N(int64(wait/5)+1)) - wait/10)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		n.MeasureLinks(ctx)
		wait = every
	}
}

// MeasureLinks measures every link the node's routes take directly to a
// member, once: round trips of routing.ProbeSizes to the member's
// PriceThread, recorded in JoinConfig.Prices as one-way samples; the
// node then reprices its routes (Reprice). A member that does not answer
// within 10 s, or leaves, is passed over. It returns the links repriced:
// none for a node without Prices. A node whose JoinConfig.PriceEvery is
// positive calls it by itself.
func (n *Node) MeasureLinks(ctx context.Context) ([]routing.Link, error) {
	t := n.Routes()
	if t == nil || n.mem.prices == nil {
		return nil, nil
	}
	p := n.pricer
	p.mu.Lock()
	defer p.mu.Unlock()
	ep := n.eng.Endpoint(engine.ThreadID(priceProber))
	buf := p.buf
	for _, ls := range t.DirectLinks(routing.ProbeSizes) {
		peer := engine.ProcID(ls.Link.Peer)
		// A late answer to an earlier round would be taken for this one's.
		for {
			if _, ok := ep.Iprobe(peer, engine.ThreadID(PriceThread), engine.Tag(priceTag)); !ok {
				break
			}
			ep.Recv(ctx, peer, engine.ThreadID(PriceThread), engine.Tag(priceTag), buf)
		}
		lctx, cancel := context.WithTimeout(ctx, priceTimeout)
		roundTrip := func(size int) (time.Duration, error) {
			t0 := time.Now()
			if err := ep.Send(lctx, peer, engine.ThreadID(PriceThread), engine.Tag(priceTag), buf[:size]); err != nil {
				return 0, err
			}
			if _, err := ep.Recv(lctx, peer, engine.ThreadID(PriceThread), engine.Tag(priceTag), buf); err != nil {
				return 0, err
			}
			return time.Since(t0), nil
		}
		if _, err := roundTrip(0); err == nil { // wakes the echo (echoProbes)
			n.mem.prices.Measure(ls.Link, ls.Sizes, priceReps, roundTrip)
		}
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return n.Reprice()
}

// observeSend records a blocking send of size bytes to proc that took d
// as a passive sample of the link its route takes, when that route is
// direct.
func (n *Node) observeSend(proc ProcID, size int, d time.Duration) {
	t := n.Routes()
	if t == nil {
		return
	}
	rt, ok := t.Lookup(uint32(proc), int64(size))
	if !ok || !rt.Direct() {
		return
	}
	n.mem.prices.ObserveSend(routing.Link{Peer: rt.Dst, Fabric: rt.Fabric, Network: rt.Network}, size, d)
}
