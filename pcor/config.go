package pcor

import (
	"fmt"
	"sync"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/rdma"
	"github.com/pcor-go/pcor/fabric/udp"
	"github.com/pcor-go/pcor/internal/engine"
)

// Mode selects how a port's dispatcher waits for datagrams.
type Mode = engine.Mode

// Dispatcher modes.
const (
	// Blocking (default) waits in the fabric; an idle node burns no CPU.
	Blocking = engine.Blocking
	// Polling spins on the fabric for the lowest latency, using a core.
	Polling = engine.Polling
)

// Listen describes one port of a node.
type Listen struct {
	// Fabric is the fabric kind: "udp" (default) or any registered with
	// RegisterFabric.
	Fabric string
	// Addr is the local address, e.g. "127.0.0.1:0" (0: any free port).
	Addr string
	// Network names the network the port is attached to (for routing).
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

// Peer tells a node how to reach another process directly.
type Peer struct {
	Proc ProcID
	// Fabric selects the local port: the first one of this kind
	// (default "udp").
	Fabric string
	// Addr is the peer's endpoint on that fabric.
	Addr string
}

// Config configures a Node. The zero value, with a JobKey, is a node with
// one UDP port on loopback.
type Config struct {
	Proc ProcID
	// JobKey is the application's key: the same non-zero value in every
	// process of one run (NewNode refuses 0 with ErrNoJobKey).
	JobKey uint64
	Listen []Listen
	Peers  []Peer
	// MaxMessage is the largest message (default 1 GiB).
	MaxMessage int64
	// RecvBudget bounds the bytes held for messages no thread has received
	// yet (default 256 MiB); beyond it senders are told BUSY and wait.
	RecvBudget int64
	// MCBs is the number of message control blocks (default 4096).
	MCBs int
	// Buckets is the size of the hashed receive table (default 4096).
	Buckets int
	// UnreachableTimeout: a destination silent this long while messages
	// to it are outstanding turns them into ErrUnreachable (default 5 s).
	UnreachableTimeout time.Duration
	// Window is the most fragments in flight to one peer (default 4096).
	Window int
}

// Opener opens a port of a fabric kind at a local address.
type Opener func(addr string) (fabric.Port, error)

var (
	openersMu sync.Mutex
	openers   = map[string]Opener{
		"udp":  func(addr string) (fabric.Port, error) { return udp.Listen(addr, udp.Config{}) },
		"rdma": rdma.ListenAddr,
	}
)

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
