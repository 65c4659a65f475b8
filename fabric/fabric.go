// Package fabric defines the transport interface that the dispatcher drives.
//
// A fabric moves datagrams (message fragments) between ports. It knows
// nothing of messages, threads or reliability: datagrams may be lost,
// duplicated or reordered, and the dispatcher above recovers from that.
// The interface is small and batched so that a fabric can use the cheapest
// system calls it has (sendmmsg/recvmmsg, UDP GSO/GRO, RDMA work-request
// lists) without the dispatcher knowing which.
package fabric

import (
	"errors"
	"time"
)

// MaxDatagramSize is the largest datagram any fabric carries: the largest
// UDP payload of an IPv4 datagram (65,535 bytes less the 20-byte IPv4 and
// 8-byte UDP headers). Fabrics that could carry more (RDMA, memory) keep to
// it, so that a message is cut the same way on every path.
const MaxDatagramSize = 65535 - 20 - 8

// ErrClosed is returned by a Port's methods once the port is closed.
var ErrClosed = errors.New("fabric: port closed")

// ErrTooBig is returned by Send for a datagram larger than MaxDatagram.
var ErrTooBig = errors.New("fabric: datagram larger than the port allows")

// Endpoint is the fabric address of a remote port. Endpoints are created by
// the port (ParseEndpoint) and compared by identity of what they address:
// two Endpoints for the same remote address have equal String values.
type Endpoint interface {
	// String returns the textual form accepted by ParseEndpoint.
	String() string
}

// Datagram is one outgoing datagram. The fabric gathers Head and Body into
// one datagram without first copying them together where it can (iovecs,
// scatter/gather entries), so Body may be a caller's buffer. Neither slice
// is retained after Send returns.
type Datagram struct {
	Head []byte   // the first bytes: pcor's header, or a whole datagram
	Body []byte   // the bytes after Head (may be empty)
	To   Endpoint // the destination port's address on this fabric
}

// Len is the size of the datagram on the wire (before fabric framing).
func (d *Datagram) Len() int { return len(d.Head) + len(d.Body) }

// Port is one attachment of a process to a fabric: a UDP socket, an RDMA
// queue-pair set, an in-memory mailbox. A Port is safe for one goroutine
// calling Receive or Poll and any number calling Send concurrently.
type Port interface {
	// Send transmits the datagrams, in order, and returns once the fabric
	// has taken them (the slices may then be reused). It returns the number
	// sent; on error the rest were not sent. A full fabric queue blocks
	// rather than drops. Datagrams are unreliable: taken is not delivered.
	Send(dgs []Datagram) (int, error)

	// Receive blocks until at least one datagram has arrived, stores up to
	// len(msgs) of them in msgs and returns how many. Each msgs[i] aliases
	// memory owned by the port, valid until the next Receive or Poll call.
	// After Close it returns ErrClosed.
	Receive(msgs [][]byte) (int, error)

	// Poll is Receive that never blocks: it returns 0 when nothing waits.
	Poll(msgs [][]byte) (int, error)

	// BatchSize is the number of datagrams Send and Receive handle per call
	// at best; callers size their slices with it.
	BatchSize() int

	// MaxDatagram is the largest datagram (Head plus Body) that reaches to
	// in one piece without relying on lower-layer fragmentation: 64 KiB on
	// loopback, the path MTU less IP/UDP headers on Ethernet.
	MaxDatagram(to Endpoint) int

	// LocalEndpoint is the address peers use to reach this port.
	LocalEndpoint() Endpoint

	// ParseEndpoint turns the String form of an Endpoint into an Endpoint.
	ParseEndpoint(s string) (Endpoint, error)

	// Kind names the fabric ("udp", "rdma", "mem").
	Kind() string

	// Alloc returns a buffer of n bytes that the fabric can send from and
	// receive into without an intermediate copy (registered memory on
	// RDMA). Fabrics without such memory return an ordinary slice.
	Alloc(n int) []byte

	// Close releases the port. It is idempotent; a blocked Receive returns
	// ErrClosed.
	Close() error
}

// Waiter is implemented by ports that a caller can drive itself while it
// waits for its own message (caller-driven progress): Wait receives like
// Receive but sleeps on the calling thread, so the datagram that ends the
// wait needs no hand-over to another thread.
type Waiter interface {
	// Wait blocks the calling thread until at least one datagram has
	// arrived and stores up to len(msgs) of them in msgs (aliasing port
	// memory, as Receive does). It returns 0 and a nil error when
	// Interrupt was called before or during the wait, and an error
	// satisfying errors.Is(err, os.ErrDeadlineExceeded) once a non-zero
	// deadline has passed.
	Wait(msgs [][]byte, deadline time.Time) (int, error)

	// Park is Receive (the goroutine waits without holding a thread) that
	// also returns 0 and a nil error when Interrupt is called: the wait of
	// the goroutine that owns the port while no thread drives it.
	Park(msgs [][]byte) (int, error)

	// Interrupt makes the Wait or Park in progress, or else the next one,
	// return.
	Interrupt() error
}

// Pender is implemented by ports that can tell, from any goroutine, whether
// datagrams wait in them that no receive has taken yet (or whose batch is
// not yet handled back, where the fabric knows of that). It is a look, not a
// promise: what it reports may change at once. The dispatcher asks it before
// it blames a peer for a silence, which may be this side's own: a port that
// goes unread (its receiving thread stalled, the machine starved) leaves the
// peer's datagrams waiting in it.
type Pender interface {
	Pending() bool
}

// Networked is implemented by ports that know the network they attach to:
// the name two ports share exactly when they can reach each other directly
// (for shared memory, the host's memory domain). A node uses it when its
// configuration names no network for the port.
type Networked interface {
	Network() string
}

// Placer is implemented by ports that can receive the body of a datagram
// straight into memory the caller names (the buffer of a posted receive),
// instead of into the port's own buffer from which the caller would copy
// it.
type Placer interface {
	// Expect names where the bodies of the next datagrams are expected to
	// go: the i-th datagram of the port's next receive that does not wait
	// (a Poll, or the look without waiting that Receive, Park and Wait
	// begin with) is received with its first head bytes into the port's
	// buffer and the next len(bodies[i]) into bodies[i]. The port then
	// calls fits(i, dg) for each datagram so received, dg its head bytes
	// and n its length: true says the datagram is the one expected, and
	// the port returns it as its head bytes alone, its body being in
	// bodies[i]. For any other datagram the port copies what went into
	// bodies[i] back into its own buffer and returns the datagram whole,
	// as without expectations; what it wrote into bodies[i] stays there.
	// The expectations serve one receive and are then forgotten. fits is
	// called on the receiving goroutine and must not block.
	//
	// Expect(0, nil, nil) withdraws the expectations: once it returns,
	// the port writes into none of the memory named before. It may be
	// called from any goroutine, and never waits for a datagram.
	Expect(head int, bodies [][]byte, fits func(i int, dg []byte, n int) bool)
}

// Leader is implemented by Placers that can show the caller the head of
// the next datagram before receiving it, so that the caller can expect
// the datagram itself: the first fragment of a message, whose place is
// known only once its header is.
type Leader interface {
	// Lead asks that the port's next receive made with no expectations
	// (but an interrupt's) first call fn with the head of the datagram
	// it is about to receive (up to 256 bytes) and its length n; the
	// datagram is then received with the expectations fn made (Expect).
	// fn is called once, on the receiving goroutine, with none of the
	// port's locks held but its receive's. Lead(nil) takes it back. A
	// receive with expectations while fn is set ends at the last
	// datagram expected.
	Lead(fn func(dg []byte, n int))
}
