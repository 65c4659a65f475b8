package routing

import (
	"math"
	"slices"

	"github.com/pcor-go/pcor/directory"
)

// graph has a node per process and a node per (fabric, network) pair. A
// process's port is a pair of edges, process→network and network→process,
// each carrying half the port's fixed cost and its whole per-byte cost, so
// crossing a network from port p to port q costs the mean of their fixed
// costs and the larger of their per-byte costs (a link is as fast as its
// slower end). The local process instead has a node per link (one of its
// ports to one port of another process), so that each of its links has its
// own price.
type graph struct {
	procs   []uint32           // process id of each process node
	members []directory.Member // member of each process node
	nets    []netKey           // (fabric, network) of node len(procs)+i
	adj     [][]edge
	self    int32 // node of the local process, -1 if absent
	forward float64
}

type netKey struct{ fabric, network string }

type edge struct {
	to      int32
	port    int32   // index of the port in its member's Ports
	fixed   float64 // ns
	perByte float64 // ns per byte
}

// newGraph builds the graph, with each of the local process's links
// priced by its regime for messages of size bytes (LinkCost.Large).
// Members with a repeated process id after the first are ignored; so are
// ports without a fabric kind or an address.
func newGraph(m *Model, self uint32, members []directory.Member, size int64) *graph {
	g := &graph{self: -1, forward: float64(max(m.Forward, 0))}
	seen := make(map[uint32]bool, len(members))
	for _, mb := range members {
		if seen[mb.Proc] {
			continue
		}
		seen[mb.Proc] = true
		g.members = append(g.members, mb)
	}
	slices.SortFunc(g.members, func(a, b directory.Member) int {
		switch {
		case a.Proc < b.Proc:
			return -1
		case a.Proc > b.Proc:
			return 1
		}
		return 0
	})
	netIdx := map[netKey]int32{}
	type portRef struct {
		proc, port int32
		net        netKey
	}
	var ports []portRef
	for i, mb := range g.members {
		g.procs = append(g.procs, mb.Proc)
		if mb.Proc == self {
			g.self = int32(i)
		}
		for j, p := range mb.Ports {
			if p.Fabric == "" || p.Addr == "" {
				continue
			}
			k := netKey{p.Fabric, p.Network}
			if _, ok := netIdx[k]; !ok {
				netIdx[k] = int32(len(g.nets))
				g.nets = append(g.nets, k)
			}
			ports = append(ports, portRef{int32(i), int32(j), k})
		}
	}
	np := int32(len(g.procs))
	g.adj = make([][]edge, int(np)+len(g.nets))
	for _, r := range ports {
		if r.proc == g.self {
			continue // the local process's links are priced one by one below
		}
		fixed, perByte := m.portCost(&g.members[r.proc].Ports[r.port])
		n := np + netIdx[r.net]
		e := edge{port: r.port, fixed: fixed / 2, perByte: perByte}
		e.to = n
		g.adj[r.proc] = append(g.adj[r.proc], e)
		e.to = r.proc
		g.adj[n] = append(g.adj[n], e)
	}
	// Each link of the local process gets a node of its own, so that it
	// carries its own price: the Model's Links entry where there is one
	// (measured or pinned), else its two ports' figures.
	for _, a := range ports {
		if a.proc != g.self {
			continue
		}
		af, ab := m.portCost(&g.members[a.proc].Ports[a.port])
		for _, b := range ports {
			if b.proc == g.self || b.net != a.net {
				continue
			}
			bf, bb := m.portCost(&g.members[b.proc].Ports[b.port])
			fixed, perByte := (af+bf)/2, max(ab, bb)
			if c, ok := m.Links[Link{Peer: g.procs[b.proc], Fabric: a.net.fabric, Network: a.net.network}]; ok {
				lat, bw, large := c.at(size)
				// A large regime's line is taken whole: its value at
				// zero bytes may be negative, and only the edges leaving
				// the root can have one, which Dijkstra's search from
				// the root allows.
				if lat > 0 || large {
					fixed = float64(lat)
				}
				if bw > 0 {
					perByte = 0
					if !math.IsInf(bw, 1) {
						perByte = 1e9 / bw
					}
				}
			}
			ln := int32(len(g.adj))
			g.nets = append(g.nets, a.net)
			g.adj = append(g.adj, []edge{{to: b.proc, port: b.port}})
			g.adj[a.proc] = append(g.adj[a.proc], edge{to: ln, port: a.port, fixed: fixed, perByte: perByte})
		}
	}
	return g
}

func (g *graph) isProc(n int32) bool { return int(n) < len(g.procs) }
