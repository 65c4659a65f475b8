package pcor

import (
	"context"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/routing"
)

// Join opens the node's ports, joins the directory with them (serving it
// in this process when cfg says so), and creates the node with the process
// id the directory gave. The node keeps a routing table of the membership
// (Routes), rebuilt on every join and leave: every member a path reaches,
// directly or through gateways (members with ports on several networks),
// gets routes chosen by message size. A member that leaves or dies is
// removed with a *PeerDownError, so sends to it and receives waiting on it
// fail; members no path reaches any more fail likewise with an
// *UnreachableError wrapping ErrNoPath. Closing the node leaves the
// directory.
//
// Join returns once this process is a member; the others join in their
// own time, and a send to a process not yet a member fails with
// ErrUnreachable. Directory().Wait(ctx, n) waits until n members are
// present, with their routes.
func Join(ctx context.Context, cfg JoinConfig) (*Node, error) {
	if cfg.Coord == "" {
		return nil, directory.ErrNoCoord
	}
	if cfg.JobKey == 0 {
		return nil, ErrNoJobKey
	}
	ls, err := cfg.listens()
	if err != nil {
		return nil, err
	}
	opened := make([]Listen, 0, len(ls))
	closeAll := func() {
		for _, l := range opened {
			l.Port.Close()
		}
	}
	var ports []directory.PortInfo
	for i, l := range ls {
		p, err := openPort(l)
		if err != nil && l.Optional {
			continue
		}
		if err != nil {
			closeAll()
			return nil, err
		}
		l.Network = networkOf(l, p)
		l.Port, l.Fabric = p, p.Kind()
		opened = append(opened, l)
		ports = append(ports, portInfo(p, l.Network, cfg.Costs, i))
	}
	dir := cfg.Directory
	if dir == "" {
		dir = directory.ServeAuto
	}
	if cfg.PriceEvery > 0 && cfg.Prices == nil {
		cfg.Prices = &routing.Prices{}
	}
	m := &membership{user: cfg.OnEvent, prices: cfg.Prices}
	env := directory.Env{Coord: cfg.Coord, Rank: cfg.Rank, Size: cfg.Size, JobKey: cfg.JobKey, HasJobKey: true, Directory: dir}
	m.client, m.server, err = directory.Bootstrap(ctx, env, directory.JoinRequest{Ports: ports, OnEvent: m.onEvent},
		directory.ServerConfig{HeartbeatTimeout: cfg.HeartbeatTimeout})
	if err != nil {
		closeAll()
		return nil, err
	}
	nc := cfg.Node
	nc.Proc = ProcID(m.client.Proc())
	nc.JobKey = cfg.JobKey
	nc.Listen = opened
	nc.Peers = nil
	n, err := NewNode(nc)
	if err != nil {
		m.shutdown()
		closeAll()
		return nil, err
	}
	m.attach(n)
	n.passive = cfg.PriceEvery > 0
	n.startPricer(cfg.PriceEvery)
	return n, nil
}

// portInfo is what the directory announces of port p: its fabric, network
// and address, and the link cost given for port i, if any.
func portInfo(p fabric.Port, network string, costs []routing.LinkCost, i int) directory.PortInfo {
	pi := directory.PortInfo{Fabric: p.Kind(), Network: network, Addr: p.LocalEndpoint().String()}
	if i < len(costs) {
		pi.Latency, pi.Bandwidth = costs[i].Latency, costs[i].Bandwidth
	}
	return pi
}
