package pcor

import (
	"errors"
	"fmt"
	"sync"

	"github.com/pcor-go/pcor/internal/engine"
)

// PortStats are the counters of one port.
type PortStats = engine.PortStats

// Node is one process of a pcor application.
type Node struct {
	eng *engine.Engine

	mu         sync.Mutex
	listens    []Listen
	nextThread ThreadID
}

// NewNode opens the configured ports, starts their dispatchers and adds the
// configured peers.
func NewNode(cfg Config) (*Node, error) {
	if cfg.JobKey == 0 {
		return nil, ErrNoJobKey
	}
	eng, err := engine.New(engine.Config{
		Proc:               cfg.Proc,
		JobKey:             cfg.JobKey,
		MaxMessage:         cfg.MaxMessage,
		RecvBudget:         cfg.RecvBudget,
		MCBs:               cfg.MCBs,
		Buckets:            cfg.Buckets,
		UnreachableTimeout: cfg.UnreachableTimeout,
		Window:             cfg.Window,
	})
	if err != nil {
		return nil, err
	}
	n := &Node{eng: eng}
	ls := cfg.Listen
	if len(ls) == 0 {
		ls = []Listen{{Fabric: "udp", Addr: "127.0.0.1:0"}}
	}
	for _, l := range ls {
		p, err := openPort(l)
		if err != nil && l.Optional {
			continue
		}
		if err != nil {
			eng.Close()
			return nil, fmt.Errorf("pcor: %s port: %w", l.Fabric, err)
		}
		if _, err := eng.AddPort(p, l.Mode); err != nil {
			p.Close()
			eng.Close()
			return nil, err
		}
		l.Port = p
		l.Fabric = p.Kind()
		l.Addr = p.LocalEndpoint().String()
		if l.Network == "" {
			l.Network = "default"
		}
		n.listens = append(n.listens, l)
	}
	if len(n.listens) == 0 {
		eng.Close()
		return nil, errors.New("pcor: none of the node's ports could be opened")
	}
	for _, p := range cfg.Peers {
		if err := n.AddPeer(p); err != nil {
			eng.Close()
			return nil, err
		}
	}
	return n, nil
}

// Proc is this node's process id.
func (n *Node) Proc() ProcID { return n.eng.Proc() }

// Endpoints lists the node's ports with their bound addresses.
func (n *Node) Endpoints() []Listen {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Listen(nil), n.listens...)
}

// AddPeer adds, or changes, the direct route to a process.
func (n *Node) AddPeer(p Peer) error {
	kind := p.Fabric
	if kind == "" {
		kind = "udp"
	}
	n.mu.Lock()
	idx := -1
	for i, l := range n.listens {
		if l.Fabric == kind {
			idx = i
			break
		}
	}
	n.mu.Unlock()
	if idx < 0 {
		return fmt.Errorf("pcor: no %s port to reach process %d", kind, p.Proc)
	}
	return n.eng.SetPeer(p.Proc, idx, p.Addr)
}

// RemovePeer forgets a process: pending sends to it, and receives waiting
// specifically on it, fail with reason (ErrPeerDown when nil).
func (n *Node) RemovePeer(proc ProcID, reason error) { n.eng.RemovePeer(proc, reason) }

// NewThread creates a thread endpoint with the next free id (0, 1, 2, ...).
func (n *Node) NewThread() *Thread {
	n.mu.Lock()
	id := n.nextThread
	n.nextThread++
	n.mu.Unlock()
	return n.Thread(id)
}

// Thread returns an endpoint for thread id. Endpoints are cheap; each is
// meant to be used by one goroutine at a time.
func (n *Node) Thread(id ThreadID) *Thread {
	n.mu.Lock()
	if id >= n.nextThread && id != AnyThread {
		n.nextThread = id + 1
	}
	n.mu.Unlock()
	return &Thread{node: n, ep: n.eng.Endpoint(id)}
}

// Alloc returns a buffer of size bytes that the node's fabrics send from
// and receive into without an intermediate copy.
func (n *Node) Alloc(size int) []byte { return n.eng.Alloc(size) }

// Stats returns the counters of every port.
func (n *Node) Stats() []PortStats { return n.eng.Stats() }

// Close stops the node: pending requests fail with ErrClosed and every
// goroutine of the node ends. It is idempotent.
func (n *Node) Close() error { return n.eng.Close() }
