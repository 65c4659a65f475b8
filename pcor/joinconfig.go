package pcor

import (
	"fmt"
	"math"
	"net"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/routing"
)

// JoinConfig configures Join: where the directory is, who this process is,
// and the node's ports.
type JoinConfig struct {
	// Coord is the directory's TCP address.
	Coord string
	// JobKey is the application's key, shared by the directory and every
	// process.
	JobKey uint64
	// Rank is the process id asked for; directory.AnyProc lets the
	// directory choose (a process joining a running application). The
	// zero value asks for 0.
	Rank int
	// Size is the number of processes started with the application (used
	// when this process serves the directory).
	Size int
	// Directory is directory.ServeAuto (default), ServeEmbed or
	// ServeNever: whether this process may serve the directory itself.
	Directory string
	// HeartbeatTimeout of a directory served by this process.
	HeartbeatTimeout time.Duration
	// Listen are the node's ports. Default: one UDP port on the local
	// address that routes to Coord and, where shared memory can be
	// opened, an shm port, through which the processes of one host reach
	// each other (routing prefers it by cost).
	Listen []Listen
	// Costs, if set, are announced with the ports for the route costs:
	// Costs[i] is the latency and bandwidth (bytes per second) of the link
	// Listen[i] is attached to. Zero fields, and ports without an entry,
	// take the routing defaults of their fabric.
	Costs []routing.LinkCost
	// Prices, if set, prices the node's links from measurement (fits of
	// probes and of real traffic, or figures pinned there): they take
	// precedence over Costs and the fabric defaults in the routes, which
	// Node.Reprice rebuilds when a link's fit has drifted. routing/probe
	// fills it.
	Prices *routing.Prices
	// PriceEvery, if positive, has the node measure its links by itself:
	// every PriceEvery (the first time a second after Join) it times
	// round trips of a few sizes to every member it reaches directly
	// (MeasureLinks), and it records one in eight of its blocking sends
	// of up to 16 KiB as passive samples, in Prices (a new one if nil). Zero or negative:
	// the node measures nothing unless told (MeasureLinks). FromEnv sets
	// it from PCOR_PRICES. Every node answers the others' probes.
	PriceEvery time.Duration
	// OnEvent, if set, is called with every membership change after the
	// node's peers were updated, in order, from the directory session's
	// reader goroutine: it must not block for long.
	OnEvent func(directory.Event)
	// Node holds the remaining node settings; its Proc, JobKey, Listen and
	// Peers are set by Join.
	Node Config
}

// listens returns the ports to open, by default one UDP port on the local
// address that routes to Coord and an optional shm port, after checking
// Costs against them.
func (cfg *JoinConfig) listens() ([]Listen, error) {
	ls := cfg.Listen
	if len(ls) == 0 {
		ip, err := addrToward(cfg.Coord)
		if err != nil {
			return nil, err
		}
		ls = []Listen{{Fabric: "udp", Addr: net.JoinHostPort(ip, "0")}, {Fabric: "shm", Optional: true}}
	}
	if len(cfg.Costs) > len(ls) {
		return nil, fmt.Errorf("pcor: %d costs for %d ports", len(cfg.Costs), len(ls))
	}
	for i, c := range cfg.Costs {
		if c.Latency < 0 || !(c.Bandwidth >= 0) || math.IsInf(c.Bandwidth, 1) {
			return nil, fmt.Errorf("pcor: port %d: invalid latency %v or bandwidth %v", i, c.Latency, c.Bandwidth)
		}
	}
	return ls, nil
}

// addrToward is the local IP address that routes to the host of hostport
// (no packet is sent).
func addrToward(hostport string) (string, error) {
	c, err := net.Dial("udp", hostport)
	if err != nil {
		return "", fmt.Errorf("pcor: finding the local address toward %s: %w", hostport, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String(), nil
}
