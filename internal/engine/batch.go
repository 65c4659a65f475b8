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

func (b *batch) reset() {
	clear(b.dgs)
	b.dgs = b.dgs[:0]
	clear(b.ports)
	b.ports = b.ports[:0]
	clear(b.done)
	b.done = b.done[:0]
	clear(b.reqs)
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
