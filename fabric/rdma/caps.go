package rdma

import "github.com/pcor-go/pcor/fabric"

// Caps: datagrams to a peer travel on one RC queue pair for as long as it
// lives, which delivers each once and in order, and the transport checks
// every packet with its invariant CRC (Reliable, Protected; the engine
// then runs no acknowledgements, retransmissions or body checksums of its
// own). A datagram the port cannot deliver (the peer cannot be connected,
// or its queue pair failed) is reported through OnPeerLost. The port
// reads peers' exposed memory (RemoteReader), holds back a peer's
// datagrams when the receiver has no room (Holder), tells a sender when
// its datagrams have reached the peer (Flusher), and learns within a
// second that a peer is gone (it says so as it closes, the keep-alive READ
// fails, or a work request to it fails).
func (p *Port) Caps() fabric.Caps {
	return fabric.Reliable | fabric.Protected | fabric.RemoteMemory | fabric.PeerLost
}

// OnPeerLost registers f to be told of each peer the port retires.
func (p *Port) OnPeerLost(f func(fabric.Endpoint)) { p.lost.Store(&f) }

// peerLost tells the registered function that ep is gone.
func (p *Port) peerLost(ep string) {
	if f := p.lost.Load(); f != nil {
		(*f)(Endpoint(ep))
	}
}

var _ fabric.LostCause = (*Port)(nil)

// maxCauses bounds the causes kept for PeerLostCause: past it, the older
// ones are forgotten.
const maxCauses = 1024

// PeerLostCause is why the port last reported ep lost (a failed work
// completion, no answer, the peer closing, a failed connection), or nil.
func (p *Port) PeerLostCause(ep fabric.Endpoint) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.causes[ep.String()]
}

// noteCauseLocked records why ep is reported lost. p.mu is held.
func (p *Port) noteCauseLocked(ep string, err error) {
	if len(p.causes) >= maxCauses {
		clear(p.causes)
	}
	p.causes[ep] = err
}
