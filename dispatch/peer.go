package dispatch

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// route is one way to reach a peer: a local port and the endpoint of the
// peer, or of the gateway that forwards to it, for messages of at least
// minSize bytes.
type route struct {
	port    *port
	ep      fabric.Endpoint
	maxDg   int
	minSize int64
}

// routeSet is a peer's routes by increasing minSize; the first takes
// messages of any size up to the next one's minSize.
type routeSet []*route

// pick returns the route for a message of size bytes.
func (s routeSet) pick(size int64) *route {
	i := len(s) - 1
	for i > 0 && size < s[i].minSize {
		i--
	}
	return s[i]
}

// has reports whether rt is still one of the routes.
func (s routeSet) has(rt *route) bool {
	for _, r := range s {
		if r == rt {
			return true
		}
	}
	return false
}

// peer holds everything the engine keeps about one remote process: the
// route to it, the send stream (queue, fragments in flight, congestion and
// retransmission state) and the receive stream from it.
type peer struct {
	e      *Engine
	proc   ProcID
	routes atomic.Pointer[routeSet]

	lastHeard atomic.Int64 // monotonic ns of the last valid datagram from it

	mu sync.Mutex
	tx txStream

	rxmu sync.Mutex
	rx   rxStream
	// ackNext links peers with an ack pending in one dispatcher batch.
	ackNext *peer
	inBatch bool
}

func newPeer(e *Engine, proc ProcID) *peer {
	p := &peer{e: e, proc: proc}
	p.tx.init(e)
	p.rx.init(e.cfg.Window)
	p.lastHeard.Store(nanotime())
	return p
}

// ctrl is the route for acknowledgements and other control datagrams: the
// one for the smallest messages.
func (p *peer) ctrl() *route {
	if rs := p.routes.Load(); rs != nil && len(*rs) > 0 {
		return (*rs)[0]
	}
	return nil
}

var epoch = time.Now()

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(epoch)) }
