// Package mem is an in-process fabric: ports are mailboxes in one Network,
// datagrams are copied between them. It lets tests run many nodes in one
// process and, wrapped by fabric/faulty, inject loss and disorder
// deterministically.
package mem

import (
	"errors"
	"sync"

	"github.com/pcor-go/pcor/fabric"
)

// DefaultMaxDatagram is the largest datagram a mem port carries by default.
const DefaultMaxDatagram = fabric.MaxDatagramSize

// DefaultQueue is the number of datagrams a port holds before dropping.
const DefaultQueue = 4096

// Network connects the ports created by Listen.
type Network struct {
	mu    sync.Mutex
	ports map[string]*Port
	// MaxDatagram, if non-zero, overrides DefaultMaxDatagram for new ports.
	MaxDatagram int
	// Queue, if non-zero, overrides DefaultQueue for new ports.
	Queue int
	// RemoteMemory, if set before ports are created, gives them the
	// fabric.RemoteMemory capability (see remote.go).
	RemoteMemory bool
}

// NewNetwork returns an empty network.
func NewNetwork() *Network { return &Network{ports: make(map[string]*Port)} }

// Endpoint is the address of a mem port: its name.
type Endpoint string

func (e Endpoint) String() string { return string(e) }

// Port is one mailbox on a Network.
type Port struct {
	net   *Network
	name  Endpoint
	maxDg int
	queue chan []byte
	done  chan struct{}
	once  sync.Once

	remote  bool
	xmu     sync.Mutex // exposed, xnext
	exposed map[uint64][]byte
	xnext   uint64
}

// ErrAddrInUse is returned by Listen for a name already taken.
var ErrAddrInUse = errors.New("mem: address in use")

// Listen creates a port named name.
func (n *Network) Listen(name string) (*Port, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ports == nil {
		n.ports = make(map[string]*Port)
	}
	if _, ok := n.ports[name]; ok {
		return nil, ErrAddrInUse
	}
	maxDg, q := n.MaxDatagram, n.Queue
	if maxDg == 0 {
		maxDg = DefaultMaxDatagram
	}
	if q == 0 {
		q = DefaultQueue
	}
	p := &Port{net: n, name: Endpoint(name), maxDg: maxDg, queue: make(chan []byte, q), done: make(chan struct{}),
		remote: n.RemoteMemory}
	n.ports[name] = p
	return p, nil
}

func (n *Network) lookup(name Endpoint) *Port {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ports[string(name)]
}

// Send copies each datagram into the destination's mailbox. A full mailbox
// or an unknown destination drops the datagram, as a network would.
func (p *Port) Send(dgs []fabric.Datagram) (int, error) {
	select {
	case <-p.done:
		return 0, fabric.ErrClosed
	default:
	}
	for i := range dgs {
		d := &dgs[i]
		if d.Len() > p.maxDg {
			return i, fabric.ErrTooBig
		}
		ep, ok := d.To.(Endpoint)
		if !ok {
			return i, errors.New("mem: not a mem endpoint")
		}
		dst := p.net.lookup(ep)
		if dst == nil {
			continue
		}
		b := make([]byte, 0, d.Len())
		b = append(append(b, d.Head...), d.Body...)
		select {
		case dst.queue <- b:
		default: // full: dropped
		}
	}
	return len(dgs), nil
}

// Receive blocks for at least one datagram.
func (p *Port) Receive(msgs [][]byte) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	select {
	case b := <-p.queue:
		msgs[0] = b
	case <-p.done:
		return 0, fabric.ErrClosed
	}
	n := 1
	for n < len(msgs) {
		select {
		case b := <-p.queue:
			msgs[n] = b
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

// Poll returns the datagrams waiting, without blocking.
func (p *Port) Poll(msgs [][]byte) (int, error) {
	select {
	case <-p.done:
		return 0, fabric.ErrClosed
	default:
	}
	n := 0
	for n < len(msgs) {
		select {
		case b := <-p.queue:
			msgs[n] = b
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

// BatchSize is the batch the dispatcher should use.
func (p *Port) BatchSize() int { return 64 }

// MaxDatagram is the network's datagram limit.
func (p *Port) MaxDatagram(fabric.Endpoint) int { return p.maxDg }

// LocalEndpoint is the port's name.
func (p *Port) LocalEndpoint() fabric.Endpoint { return p.name }

// ParseEndpoint accepts any name.
func (p *Port) ParseEndpoint(s string) (fabric.Endpoint, error) { return Endpoint(s), nil }

// Kind is "mem".
func (p *Port) Kind() string { return "mem" }

// Alloc returns ordinary memory.
func (p *Port) Alloc(n int) []byte { return make([]byte, n) }

// Close removes the port from its network.
func (p *Port) Close() error {
	p.once.Do(func() {
		close(p.done)
		p.net.mu.Lock()
		delete(p.net.ports, string(p.name))
		p.net.mu.Unlock()
	})
	return nil
}
