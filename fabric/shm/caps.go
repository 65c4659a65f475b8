package shm

import "github.com/pcor-go/pcor/fabric"

// Caps: a ring delivers every datagram once and in order, waits rather
// than drops when full, and nothing but the two ports writes it. The one
// loss is a receiver that closed, died or never listened, which the port
// reports through OnPeerLost. A receiver reads large messages straight
// from the sender's memory where the kernel lets it (cma_linux.go).
func (p *Port) Caps() fabric.Caps {
	return fabric.Reliable | fabric.Protected | fabric.PeerLost | fabric.RemoteMemory
}

// OnPeerLost registers f to be told of destinations found gone.
func (p *Port) OnPeerLost(f func(fabric.Endpoint)) { p.lost.Store(&f) }

// peerLost reports e as gone to the registered function, if any.
func (p *Port) peerLost(e Endpoint) {
	if f := p.lost.Load(); f != nil {
		(*f)(e)
	}
}

// Network is "shm-" and the host identity: ports reach each other exactly
// when they share it.
func (p *Port) Network() string { return "shm-" + p.local.Host }
