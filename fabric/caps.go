package fabric

// Caps are the guarantees and services a port offers beyond unreliable
// datagrams. The engine above a port reads them once, when it adopts the
// port, and leaves out the work the fabric already does: acknowledgements
// and retransmission on a reliable fabric, the body checksum on one that
// protects its payload.
type Caps uint32

const (
	// Reliable: every datagram Send took reaches the destination port
	// exactly once and in order per destination, unless the destination
	// is lost (which a PeerLost fabric reports). A reliable port never
	// drops for want of room: Send waits.
	Reliable Caps = 1 << iota
	// Protected: the fabric detects corruption of a datagram's bytes
	// (UDP's checksum, a CRC on the link, memory that nothing else
	// writes), so a datagram received is the datagram sent.
	Protected
	// RemoteMemory: the port can read and write registered memory of a
	// peer (RDMA READ/WRITE).
	RemoteMemory
	// PeerLost: the port reports destinations it knows to be gone through
	// the LostPeers interface.
	PeerLost
)

// Has reports whether c includes every capability in want.
func (c Caps) Has(want Caps) bool { return c&want == want }

// String lists the capabilities, e.g. "reliable|protected".
func (c Caps) String() string {
	if c == 0 {
		return "none"
	}
	names := []string{"reliable", "protected", "remote-memory", "peer-lost"}
	s := ""
	for i, n := range names {
		if c&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	return s
}

// Capable is implemented by ports that offer capabilities. A port that
// does not implement it offers none.
type Capable interface {
	Caps() Caps
}

// CapsOf returns the capabilities of p.
func CapsOf(p Port) Caps {
	if c, ok := p.(Capable); ok {
		return c.Caps()
	}
	return 0
}

// LostPeers is implemented by ports with the PeerLost capability.
type LostPeers interface {
	// OnPeerLost registers f to be called, at most once per loss, with an
	// endpoint the port learned is gone (its process died or closed the
	// port, or no port listens there). f is called from whichever
	// goroutine noticed (a Send, a Receive) and must not block.
	OnPeerLost(f func(Endpoint))
}

// LostCause is implemented by LostPeers ports that can say why they found
// a peer gone (a transport error, no answer, the peer closing): the engine
// adds it to the error of the requests the loss fails.
type LostCause interface {
	// PeerLostCause is why the port last found ep gone, or nil.
	PeerLostCause(ep Endpoint) error
}
