package dispatch

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// route is how a peer is reached: a local port and the peer's endpoint.
type route struct {
	port  *port
	ep    fabric.Endpoint
	maxDg int
}

// peer holds everything the engine keeps about one remote process: the
// route to it, the send stream (queue, fragments in flight, congestion and
// retransmission state) and the receive stream from it.
type peer struct {
	e     *Engine
	proc  ProcID
	route atomic.Pointer[route]

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

var epoch = time.Now()

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(epoch)) }
