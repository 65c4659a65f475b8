package pcor

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/rdma"
	"github.com/pcor-go/pcor/fabric/shm"
	"github.com/pcor-go/pcor/fabric/udp"
	"github.com/pcor-go/pcor/routing"
)

// Listen describes one port of a node.
type Listen struct {
	// Fabric is the fabric kind: "udp" (default), "shm" (shared memory
	// between the processes of one host), "rdma", or any registered with
	// RegisterFabric.
	Fabric string
	// Addr is the local address, e.g. "127.0.0.1:0" (0: any free port);
	// for shm, the port's name ("": one unique to the process); for rdma,
	// the device and port number ("": the first device; "rxe0",
	// "rxe0:1"), the endpoint being the address of the port's own queue
	// pair, which the directory publishes.
	Addr string
	// Network names the network the port is attached to (for routing).
	// Default: the one the port names itself (fabric.Networked: for shm,
	// the host's shared-memory domain), else "default".
	Network string
	// Mode is the dispatcher mode of the port.
	Mode Mode
	// Port, if set, is an opened port used as is (Fabric and Addr are
	// then taken from it).
	Port fabric.Port
	// Optional lets the node start without this port when its fabric is
	// not available here (for example rdma without an RDMA device): the
	// node then uses its other ports. A required port that cannot open
	// fails NewNode with the fabric's error (errors.Is(err,
	// rdma.ErrNoDevice)).
	Optional bool
}

// Opener opens a port of a fabric kind at a local address.
type Opener func(addr string) (fabric.Port, error)

var (
	openersMu sync.Mutex
	openers   = map[string]Opener{
		"udp":  func(addr string) (fabric.Port, error) { return udp.Listen(addr, udp.Config{}) },
		"rdma": rdma.ListenAddr,
		"shm":  func(addr string) (fabric.Port, error) { return shm.Listen(addr, shm.Config{}) },
	}
)

// networkOf is the network of port p opened for l: l.Network if given,
// else the one the port names, else "default".
func networkOf(l Listen, p fabric.Port) string {
	if l.Network != "" {
		return l.Network
	}
	if nw, ok := p.(fabric.Networked); ok {
		return nw.Network()
	}
	return "default"
}

// RegisterFabric makes a fabric kind available to Listen.Fabric.
func RegisterFabric(kind string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	openers[kind] = open
}

func openPort(l Listen) (fabric.Port, error) {
	if l.Port != nil {
		return l.Port, nil
	}
	kind := l.Fabric
	if kind == "" {
		kind = "udp"
	}
	openersMu.Lock()
	open := openers[kind]
	openersMu.Unlock()
	if open == nil {
		return nil, fmt.Errorf("pcor: unknown fabric %q", kind)
	}
	addr := l.Addr
	if addr == "" && kind == "udp" {
		addr = "127.0.0.1:0"
	}
	return open(addr)
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
