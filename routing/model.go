package routing

import (
	"math"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// LinkCost is the latency and bandwidth (bytes per second) of a link.
type LinkCost struct {
	Latency   time.Duration
	Bandwidth float64
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
			"udp":  {50 * time.Microsecond, 1e9},
			"rdma": {5 * time.Microsecond, 10e9},
			"mem":  {time.Microsecond, 10e9},
			"shm":  {2 * time.Microsecond, 8e9},
		},
		Unknown: LinkCost{50 * time.Microsecond, 1e9},
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
