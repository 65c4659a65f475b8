package pcor

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/internal/engine"
	"github.com/pcor-go/pcor/routing"
)

// Node is one process of a pcor application.
type Node struct {
	eng *engine.Engine
	mem *membership // the directory session of a node made by Join; else nil

	// Link measurement of a node made by Join (prices.go): the probe
	// echo and measuring rounds, and whether blocking sends are
	// recorded as passive samples.
	pricer  *pricer
	passive bool
	sends   atomic.Uint64 // blocking sends that could be sampled

	mu         sync.Mutex
	listens    []Listen
	nextThread ThreadID

	closeOnce sync.Once
	closeErr  error
	closed    atomic.Bool
}

// NewNode opens the configured ports, starts their dispatchers and adds the
// configured peers. Its peers are the ones given (Config.Peers, AddPeer):
// Join makes a node whose peers come from a directory.
func NewNode(cfg Config) (*Node, error) {
	if cfg.JobKey == 0 {
		return nil, ErrNoJobKey
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	eng, err := engine.New(engine.Config{
		Proc:               engine.ProcID(cfg.Proc),
		JobKey:             cfg.JobKey,
		MaxMessage:         cfg.MaxMessage,
		RecvBudget:         cfg.RecvBudget,
		MCBs:               cfg.MCBs,
		Buckets:            cfg.Buckets,
		UnreachableTimeout: cfg.UnreachableTimeout,
		Window:             cfg.Window,
		SumBodies:          cfg.SumBodies,
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
		if _, err := eng.AddPort(p, engine.Mode(l.Mode)); err != nil {
			p.Close()
			eng.Close()
			return nil, err
		}
		l.Port = p
		l.Fabric = p.Kind()
		l.Addr = p.LocalEndpoint().String()
		l.Network = networkOf(l, p)
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

// checkConfig refuses a wildcard process id and negative sizes, counts
// and times: 0 is each one's default, and a negative value is a mistake.
func checkConfig(cfg Config) error {
	if cfg.Proc == AnyProc {
		return fmt.Errorf("%w: Config.Proc is AnyProc, the receive wildcard, not a process id", ErrInvalid)
	}
	if cfg.UnreachableTimeout < 0 {
		return fmt.Errorf("%w: Config.UnreachableTimeout is %v: it is 0 (the default, 5 s) or more", ErrInvalid, cfg.UnreachableTimeout)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxMessage", cfg.MaxMessage},
		{"RecvBudget", cfg.RecvBudget},
		{"MCBs", int64(cfg.MCBs)},
		{"Buckets", int64(cfg.Buckets)},
		{"Window", int64(cfg.Window)},
	} {
		if f.v < 0 {
			return fmt.Errorf("%w: Config.%s is %d: it is 0 (the default) or more", ErrInvalid, f.name, f.v)
		}
	}
	return nil
}

// Proc is this node's process id.
func (n *Node) Proc() ProcID { return ProcID(n.eng.Proc()) }

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
	return n.eng.SetPeer(engine.ProcID(p.Proc), idx, p.Addr)
}

// RemovePeer forgets a process: pending sends to it, and receives waiting
// specifically on it, fail with reason (a *PeerDownError when nil).
func (n *Node) RemovePeer(proc ProcID, reason error) {
	if reason == nil {
		reason = &PeerDownError{Proc: proc}
	}
	n.eng.RemovePeer(engine.ProcID(proc), reason)
}

// NewThread creates a thread endpoint with the next free id (0, 1, 2, ...).
func (n *Node) NewThread() *Thread {
	n.mu.Lock()
	id := n.nextThread
	n.nextThread++
	n.mu.Unlock()
	return n.Thread(id)
}

// Thread returns an endpoint for thread id. Endpoints are cheap; each is
// meant to be used by one goroutine at a time. AnyThread is the receive
// wildcard, not a thread: the endpoint returned for it refuses every
// operation with ErrInvalid (Iprobe finds nothing).
func (n *Node) Thread(id ThreadID) *Thread {
	if id == AnyThread {
		return &Thread{node: n, ep: n.eng.Endpoint(engine.ThreadID(id)),
			err: fmt.Errorf("%w: Thread(AnyThread): AnyThread is the receive wildcard, not an endpoint", ErrInvalid)}
	}
	n.mu.Lock()
	if id >= n.nextThread && id < priceProber {
		n.nextThread = id + 1
	}
	n.mu.Unlock()
	return &Thread{node: n, ep: n.eng.Endpoint(engine.ThreadID(id))}
}

// Alloc returns a buffer of size bytes that the node's fabrics send from
// and receive into without an intermediate copy; nil for a negative size.
func (n *Node) Alloc(size int) []byte {
	if size < 0 {
		return nil
	}
	return n.eng.Alloc(size)
}

// Stats returns the counters of every port.
func (n *Node) Stats() []PortStats {
	es := n.eng.Stats()
	out := make([]PortStats, len(es))
	for i, s := range es {
		out[i] = portStats(s)
	}
	return out
}

// Directory returns the directory session of a node made by Join or
// FromEnv (nil for other nodes, and once the node is closed): its cached
// membership, events, Wait.
func (n *Node) Directory() *directory.Client {
	if n.mem == nil || n.closed.Load() {
		return nil
	}
	return n.mem.client
}

// Routes returns the routing table of a node made by Join or FromEnv: how
// it reaches every member of the application, by message size, and which
// members no path reaches. It is rebuilt on every membership change; the
// table returned is not modified afterwards. Other nodes, and closed ones,
// have no table (nil).
func (n *Node) Routes() *routing.Table {
	if n.mem == nil || n.closed.Load() {
		return nil
	}
	return n.mem.router.table.Load()
}

// Reprice refits the link prices measured in JoinConfig.Prices and, when
// one moved by more than their drift, rebuilds the routes with them (as a
// membership change does). It returns the links repriced: none for a node
// without measured prices.
func (n *Node) Reprice() ([]routing.Link, error) {
	if n.mem == nil || n.closed.Load() {
		return nil, nil
	}
	return n.mem.router.reprice()
}

// Close stops the node: pending requests fail with ErrClosed and every
// goroutine of the node ends; a node made by Join then leaves the
// directory. It is idempotent.
//
// The copies of messages Isend copied (see Thread.Isend) that their
// destination has not yet acknowledged are given a while to be
// acknowledged first: at most Config.UnreachableTimeout and no more than
// 2 s, as a program that
// sends its last messages and closes expects them delivered. A
// destination that holds them without taking them (out of room, its
// threads not receiving) makes Close wait that long before the copies
// fail; with no copy pending Close does not wait.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.closed.Store(true)
		if n.pricer != nil {
			n.pricer.close()
		}
		n.closeErr = n.eng.Close()
		if n.mem != nil {
			n.mem.shutdown()
		}
	})
	return n.closeErr
}
