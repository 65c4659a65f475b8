package engine

import (
	"runtime"
	"testing"

	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/internal/wire"
)

// FuzzHandle feeds well-formed, correctly sealed but arbitrary headers to a
// dispatcher: forged geometry, huge claimed totals, stray acks, aborts and
// refusals. Nothing may panic; one datagram grows the heap by at most one
// chunk of storage plus its bookkeeping (fuzzHeapPerDatagram), and the
// receive budget held never passes RecvBudget.
func FuzzHandle(f *testing.F) {
	f.Add(uint8(wire.Data), uint32(1000), uint64(1<<30), uint32(5), uint64(0), uint64(0), []byte("x"))
	f.Add(uint8(wire.Data), uint32(300), uint64(301), uint32(1), uint64(0), uint64(3), []byte("y"))
	f.Add(uint8(wire.Abort), uint32(0), uint64(0), uint32(0), uint64(0), uint64(1), []byte{})
	f.Add(uint8(wire.Ack), uint32(0), uint64(0), uint32(0), uint64(0), uint64(0), make([]byte, 24))
	f.Add(uint8(wire.Busy), uint32(0), uint64(0), uint32(0), uint64(7), uint64(9), []byte{})
	f.Add(uint8(wire.Data), uint32(1200), uint64(8<<20), uint32(3), uint64(1), uint64(2), []byte("z"))
	f.Add(uint8(wire.Refuse), uint32(0), uint64(1<<20), uint32(0), uint64(3), uint64(4), []byte{})
	n := mem.NewNetwork()
	a, _ := n.Listen("fa")
	b, _ := n.Listen("fb")
	const budget = 1 << 20
	e, err := New(Config{Proc: 0, JobKey: 1, RecvBudget: budget, MaxMessage: 1 << 30})
	if err != nil {
		f.Fatal(err)
	}
	e.AddPort(a, Blocking)
	e.SetPeer(1, 0, b.LocalEndpoint().String())
	d := e.ports[0]
	f.Cleanup(func() { e.Close(); b.Close() })
	f.Fuzz(func(t *testing.T, kind uint8, fragSize uint32, total uint64, idx uint32, msgID, seq uint64, body []byte) {
		if kind == uint8(wire.Data) && uint64(len(body)) != wire.FragLen(total, fragSize, idx) {
			// Make the geometry consistent often enough to reach reassembly.
			if fragSize == 0 || fragSize > wire.MaxFragment-wire.HeaderSize {
				return
			}
			body = make([]byte, wire.FragLen(total, fragSize, idx))
		}
		h := wire.Header{Kind: wire.Kind(kind), JobKey: 1, SrcProc: 1, DstProc: 0, FragSize: fragSize,
			Total: total, FragIndex: idx, MsgID: msgID % 64, Seq: seq % 8192}
		pkt := make([]byte, wire.HeaderSize+len(body))
		h.Encode(pkt[:wire.HeaderSize], body)
		copy(pkt[wire.HeaderSize:], body)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		d.handle(pkt, nanotime())
		d.flush()
		runtime.ReadMemStats(&ms)
		if grown := int64(ms.HeapAlloc) - int64(before); grown > fuzzHeapPerDatagram {
			t.Fatalf("one %d-byte datagram grew the heap by %d bytes (at most %d)", len(pkt), grown, fuzzHeapPerDatagram)
		}
		if u := e.BudgetUsed(); u > budget {
			t.Fatalf("%d bytes of budget held, more than the %d configured", u, budget)
		}
	})
}

// fuzzHeapPerDatagram is the most one datagram may add to the heap: one
// chunk of message storage, and for a first fragment claiming the largest
// message in the smallest fragments, its chunk table (32 KiB) and fragment
// bitmap (24 KiB of block table and a 512-byte block).
const fuzzHeapPerDatagram = chunkSize + 128<<10
