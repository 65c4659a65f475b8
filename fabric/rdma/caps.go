package rdma

import "github.com/pcor-go/pcor/fabric"

// Caps: the RC transport checks every packet with its invariant CRC, the
// port reads peers' exposed memory (RemoteReader), and it learns within
// seconds that a peer is gone (it says so as it closes, it stops answering
// the keep-alive, or a work request to it fails). Datagrams are not promised: a send to a peer
// being connected or retired is dropped.
func (p *Port) Caps() fabric.Caps { return fabric.Protected | fabric.RemoteMemory | fabric.PeerLost }

// OnPeerLost registers f to be told of each peer the port retires.
func (p *Port) OnPeerLost(f func(fabric.Endpoint)) { p.lost.Store(&f) }

// peerLost tells the registered function that ep is gone.
func (p *Port) peerLost(ep string) {
	if f := p.lost.Load(); f != nil {
		(*f)(Endpoint(ep))
	}
}
