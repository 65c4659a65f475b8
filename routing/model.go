package routing

import (
	"math"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// LinkCost is the latency and bandwidth (bytes per second) of a link: a
// message of m bytes takes Latency + m/Bandwidth. A link measured in two
// regimes has Large set: from Large.From bytes up its messages take
// Large.Latency + m/Large.Bandwidth instead (a shaper whose token bucket
// lets small messages through at the wire's speed and the rest at its
// rate; a fabric that changes protocol for large messages).
type LinkCost struct {
	Latency   time.Duration
	Bandwidth float64
	Large     Regime
}

// Regime is a link's cost line from From bytes up. Its Latency is the
// line's value at zero bytes, which may be negative (a token bucket's
// worth of bytes passes early: T = a − burst/rate + m/rate); it prices
// only messages of From bytes or more. It applies only where From and
// Bandwidth are positive.
type Regime struct {
	From      int64
	Latency   time.Duration
	Bandwidth float64
}

// at returns the line of the regime of c that prices a message of size
// bytes: c's own, or Large's from Large.From up (large reports which).
func (c LinkCost) at(size int64) (lat time.Duration, bw float64, large bool) {
	if c.Large.From > 0 && c.Large.Bandwidth > 0 && size >= c.Large.From {
		return c.Large.Latency, c.Large.Bandwidth, true
	}
	return c.Latency, c.Bandwidth, false
}

// Time is the time (ns) the link's cost gives a message of size bytes.
func (c LinkCost) Time(size int64) float64 {
	lat, bw, _ := c.at(size)
	t := float64(lat)
	if bw > 0 && !math.IsInf(bw, 1) {
		t += float64(size) * 1e9 / bw
	}
	return t
}

// Model holds the figures used where ports do not state theirs.
type Model struct {
	// Defaults maps a fabric kind to its usual link cost.
	Defaults map[string]LinkCost
	// Unknown is used for fabric kinds missing from Defaults.
	Unknown LinkCost
	// Forward is the fixed cost a gateway adds to a message it forwards.
	Forward time.Duration
	// Links, if set, prices links of the local process one by one (from
	// measurement, or pinned by configuration), taking precedence over the
	// ports' figures; zero fields keep the ports' figure.
	Links map[Link]LinkCost
}

// Link names a link of the local process: to Peer over the network where
// both have a port of the fabric kind.
type Link struct {
	Peer            uint32
	Fabric, Network string
}

// DefaultModel returns the model Build uses.
func DefaultModel() Model {
	return Model{
		Defaults: map[string]LinkCost{
			"udp":  {Latency: 50 * time.Microsecond, Bandwidth: 1e9},
			"rdma": {Latency: 5 * time.Microsecond, Bandwidth: 10e9},
			"mem":  {Latency: time.Microsecond, Bandwidth: 10e9},
			"shm":  {Latency: 2 * time.Microsecond, Bandwidth: 8e9},
		},
		Unknown: LinkCost{Latency: 50 * time.Microsecond, Bandwidth: 1e9},
		Forward: 10 * time.Microsecond,
	}
}

// portCost returns the fixed cost (ns) and per-byte cost (ns per byte) of
// a port, filling what it leaves unknown (zero or invalid) from the model.
func (m *Model) portCost(p *directory.PortInfo) (fixed, perByte float64) {
	def, ok := m.Defaults[p.Fabric]
	if !ok {
		def = m.Unknown
	}
	lat := p.Latency
	if lat <= 0 {
		lat = def.Latency
	}
	bw := p.Bandwidth
	if !(bw > 0) || math.IsInf(bw, 1) {
		bw = def.Bandwidth
	}
	fixed = float64(max(lat, 0))
	if bw > 0 && !math.IsInf(bw, 1) {
		perByte = 1e9 / bw
	}
	return fixed, perByte
}
