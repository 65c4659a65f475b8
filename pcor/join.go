package pcor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/fabric"
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
	// address that routes to Coord.
	Listen []Listen
	// Costs, if set, are announced with the ports for the route costs:
	// Costs[i] is the latency and bandwidth (bytes per second) of the link
	// Listen[i] is attached to. Zero fields, and ports without an entry,
	// take the routing defaults of their fabric.
	Costs []routing.LinkCost
	// OnEvent, if set, is called with every membership change after the
	// node's peers were updated, in order, from the directory session's
	// reader goroutine: it must not block for long.
	OnEvent func(directory.Event)
	// Node holds the remaining node settings; its Proc, JobKey, Listen and
	// Peers are set by Join.
	Node Config
}

// membership links a joined node to its directory session. Membership
// changes arrive on the client's reader goroutine, possibly before the node
// exists; until then they are held (the client's cache reflects them).
type membership struct {
	client *directory.Client
	server *directory.Server
	user   func(directory.Event)
	once   sync.Once

	mu      sync.Mutex
	node    *Node
	router  *router
	pending []directory.Event
}

func (m *membership) onEvent(ev directory.Event) {
	m.mu.Lock()
	if m.router == nil {
		m.pending = append(m.pending, ev)
		m.mu.Unlock()
		return
	}
	m.router.event(ev)
	m.mu.Unlock()
	if m.user != nil {
		m.user(ev)
	}
}

// attach hands the node its membership: routes to every cached member,
// which already reflects the changes held meanwhile; those are then
// passed on to the user's callback.
func (m *membership) attach(n *Node) {
	m.mu.Lock()
	m.node = n
	m.router = newRouter(n.eng, uint32(n.Proc()))
	m.router.reset(m.client.Members())
	held := m.pending
	m.pending = nil
	m.mu.Unlock()
	if m.user != nil {
		for _, ev := range held {
			m.user(ev)
		}
	}
}

var joined sync.Map // *Node -> *membership

// Join opens the node's ports, joins the directory with them (serving it
// in this process when cfg says so), and creates the node with the process
// id the directory gave. The node keeps a routing table of the membership
// (Routes), rebuilt on every join and leave: every member a path reaches,
// directly or through gateways (members with ports on several networks),
// gets routes chosen by message size. A member that leaves or dies is
// removed with ErrPeerDown, so sends to it and receives waiting on it
// fail; members no path reaches any more fail likewise with an
// UnreachableError whose Reason is ReasonNoPath. Closing the node leaves
// the directory.
func Join(ctx context.Context, cfg JoinConfig) (*Node, error) {
	if cfg.Coord == "" {
		return nil, directory.ErrNoCoord
	}
	if cfg.JobKey == 0 {
		return nil, ErrNoJobKey
	}
	ls := cfg.Listen
	if len(ls) == 0 {
		ip, err := addrToward(cfg.Coord)
		if err != nil {
			return nil, err
		}
		ls = []Listen{{Fabric: "udp", Addr: net.JoinHostPort(ip, "0")}}
	}
	m := &membership{user: cfg.OnEvent}
	var ports []directory.PortInfo
	opened := make([]Listen, 0, len(ls))
	closeAll := func() {
		for _, l := range opened {
			l.Port.Close()
		}
	}
	if len(cfg.Costs) > len(ls) {
		return nil, fmt.Errorf("pcor: %d costs for %d ports", len(cfg.Costs), len(ls))
	}
	for i, c := range cfg.Costs {
		if c.Latency < 0 || !(c.Bandwidth >= 0) || math.IsInf(c.Bandwidth, 1) {
			return nil, fmt.Errorf("pcor: port %d: invalid latency %v or bandwidth %v", i, c.Latency, c.Bandwidth)
		}
	}
	for i, l := range ls {
		p, err := openPort(l)
		if err != nil {
			closeAll()
			return nil, err
		}
		if l.Network == "" {
			l.Network = "default"
		}
		l.Port = &closeHook{Port: p, m: m}
		l.Fabric = p.Kind()
		opened = append(opened, l)
		pi := directory.PortInfo{Fabric: p.Kind(), Network: l.Network, Addr: p.LocalEndpoint().String()}
		if i < len(cfg.Costs) {
			pi.Latency, pi.Bandwidth = cfg.Costs[i].Latency, cfg.Costs[i].Bandwidth
		}
		ports = append(ports, pi)
	}
	dir := cfg.Directory
	if dir == "" {
		dir = directory.ServeAuto
	}
	env := directory.Env{Coord: cfg.Coord, Rank: cfg.Rank, Size: cfg.Size, JobKey: cfg.JobKey, HasJobKey: true, Directory: dir}
	client, server, err := directory.Bootstrap(ctx, env, directory.JoinRequest{Ports: ports, OnEvent: m.onEvent},
		directory.ServerConfig{HeartbeatTimeout: cfg.HeartbeatTimeout})
	if err != nil {
		closeAll()
		return nil, err
	}
	m.client, m.server = client, server
	nc := cfg.Node
	nc.Proc = ProcID(client.Proc())
	nc.JobKey = cfg.JobKey
	nc.Listen = opened
	nc.Peers = nil
	n, err := NewNode(nc)
	if err != nil {
		m.shutdown()
		closeAll()
		return nil, err
	}
	joined.Store(n, m)
	m.attach(n)
	return n, nil
}

// FromEnv joins the application described by the environment (PCOR_COORD,
// PCOR_RANK, PCOR_SIZE, PCOR_JOBKEY, PCOR_LISTEN, PCOR_DIRECTORY or a
// launcher's rank variables; see directory/README.md).
func FromEnv(ctx context.Context) (*Node, error) { return FromEnvWith(ctx, JoinConfig{}) }

// FromEnvWith is FromEnv with the fields the environment does not set
// (Node, OnEvent, HeartbeatTimeout) taken from cfg, and Listen and Costs
// too when PCOR_LISTEN is not set.
func FromEnvWith(ctx context.Context, cfg JoinConfig) (*Node, error) {
	env, err := directory.FromEnv()
	if err != nil {
		return nil, err
	}
	if !env.HasJobKey {
		return nil, directory.ErrNoJobKey
	}
	ls, cs, err := ParseListenCosts(env.Listen)
	if err != nil {
		return nil, err
	}
	cfg.Coord, cfg.JobKey, cfg.Rank, cfg.Size, cfg.Directory = env.Coord, env.JobKey, env.Rank, env.Size, env.Directory
	if len(ls) > 0 {
		cfg.Listen, cfg.Costs = ls, cs
	}
	return Join(ctx, cfg)
}

// Directory returns the directory session of a node made by Join or
// FromEnv (nil for other nodes): its cached membership, events, Wait.
func (n *Node) Directory() *directory.Client {
	if v, ok := joined.Load(n); ok {
		return v.(*membership).client
	}
	return nil
}

// ParseListen parses PCOR_LISTEN: comma-separated ports, each
// [fabric/]address[@network][;latency=D][;bandwidth=B], e.g.
// "10.0.0.1:0@lan,rdma/mlx5_0:1@ib". The fabric defaults to udp. The
// optional latency (a Go duration) and bandwidth (bytes per second) are
// the link's figures for the route costs; ParseListenCosts returns them.
func ParseListen(s string) ([]Listen, error) {
	ls, _, err := ParseListenCosts(s)
	return ls, err
}

// ParseListenCosts is ParseListen also returning each port's link cost
// (zero fields where none is given), for JoinConfig.Costs.
func ParseListenCosts(s string) ([]Listen, []routing.LinkCost, error) {
	var ls []Listen
	var cs []routing.LinkCost
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		entry := part
		part, opts, _ := strings.Cut(part, ";")
		var c routing.LinkCost
		if opts != "" {
			for _, o := range strings.Split(opts, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(o), "=")
				var err error
				switch k {
				case "latency":
					c.Latency, err = time.ParseDuration(v)
					if err == nil && c.Latency < 0 {
						err = errors.New("negative")
					}
				case "bandwidth":
					c.Bandwidth, err = strconv.ParseFloat(v, 64)
					if err == nil && (!(c.Bandwidth >= 0) || math.IsInf(c.Bandwidth, 1)) {
						err = errors.New("out of range")
					}
				default:
					err = errors.New("unknown option")
				}
				if err != nil {
					return nil, nil, fmt.Errorf("%w: PCOR_LISTEN entry %q: %q: %v", directory.ErrEnv, entry, o, err)
				}
			}
		}
		l := Listen{Fabric: "udp"}
		if f, rest, ok := strings.Cut(part, "/"); ok {
			l.Fabric, part = f, rest
		}
		if i := strings.LastIndexByte(part, '@'); i >= 0 {
			part, l.Network = part[:i], part[i+1:]
		}
		if l.Fabric == "" || part == "" {
			return nil, nil, fmt.Errorf("%w: PCOR_LISTEN entry %q", directory.ErrEnv, entry)
		}
		l.Addr = part
		ls = append(ls, l)
		cs = append(cs, c)
	}
	return ls, cs, nil
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

// shutdown leaves the directory and waits for the event loop.
func (m *membership) shutdown() {
	m.once.Do(func() {
		if m.client != nil {
			m.client.Close()
		}
		if m.server != nil {
			m.server.Close()
		}
		m.mu.Lock()
		n := m.node
		m.mu.Unlock()
		if n != nil {
			joined.Delete(n)
		}
	})
}

// closeHook is a port whose Close, called when the node closes, also ends
// the node's directory session.
type closeHook struct {
	fabric.Port
	m *membership
}

func (c *closeHook) Close() error {
	c.m.shutdown()
	return c.Port.Close()
}
