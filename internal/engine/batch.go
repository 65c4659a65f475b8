package engine

import (
	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// batch is a reusable set of outgoing datagrams with their headers.
type batch struct {
	dgs   []fabric.Datagram
	ports []*dispatcher // the port each datagram leaves from
	heads [][wire.HeaderSize]byte
	acks  [][]byte
	// bundles: the bodies of bundles (bundle.go), by datagram index
	bundles [][]byte
	done    []*Request
	// posted: posted sends completed (and counted) while p.mu was held
	posted uint64
	// reqs: the requests whose data the datagrams read, referenced until
	// they have been transmitted
	reqs []*Request
	// piggy: data datagrams carry ackCum, the receive stream's cumulative
	// point, as an acknowledgement.
	piggy  bool
	ackCum uint64
}

func newBatch(n int) *batch {
	return &batch{dgs: make([]fabric.Datagram, 0, n), ports: make([]*dispatcher, 0, n), heads: make([][wire.HeaderSize]byte, n)}
}

func (b *batch) full() bool { return len(b.dgs) == cap(b.dgs) }

// reset empties b for reuse. Its slices are zeroed element by element
// (clearing the pointers they hold): clear() calls the runtime's
// memclrHasPointers, about 45 instructions a call before it clears
// anything, for the one or two elements a ping-pong's batch holds. (The
// loops are not in the form the compiler turns back into that call.)
func (b *batch) reset() {
	for i := 0; i < len(b.dgs); i++ {
		b.dgs[i] = fabric.Datagram{}
	}
	b.dgs = b.dgs[:0]
	for i := 0; i < len(b.ports); i++ {
		b.ports[i] = nil
	}
	b.ports = b.ports[:0]
	for i := 0; i < len(b.done); i++ {
		b.done[i] = nil
	}
	b.done = b.done[:0]
	for i := 0; i < len(b.reqs); i++ {
		b.reqs[i] = nil
	}
	b.reqs = b.reqs[:0]
	b.piggy, b.ackCum, b.posted = false, 0, 0
}

// ackScratch returns space for the i-th acknowledgement body of a batch.
func (b *batch) ackScratch(i int) []byte {
	for len(b.acks) <= i {
		b.acks = append(b.acks, make([]byte, wire.AckBodyLen(wire.MaxSackBlocks)))
	}
	return b.acks[i]
}

// bundleScratch returns space for the body of a bundle sent as the i-th
// datagram of a batch.
func (b *batch) bundleScratch(i int) []byte {
	for len(b.bundles) <= i {
		b.bundles = append(b.bundles, nil)
	}
	if b.bundles[i] == nil {
		b.bundles[i] = make([]byte, 0, bundleBytes)
	}
	return b.bundles[i]
}
