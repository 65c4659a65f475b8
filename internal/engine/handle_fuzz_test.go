package engine

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/internal/wire"
)

// FuzzHandle feeds well-formed, correctly sealed but arbitrary headers to a
// dispatcher: forged geometry, huge claimed totals, stray acks, aborts and
// refusals, rendezvous control messages (withdrawals and their answers
// naming nothing, malformed ones), and bundles of small messages (kind with fuzzBundle set: the
// body is read as sub-headers each followed by its message, see
// fuzzBundleBody) whose first MsgID and Seq overlap messages already
// received, alone or bundled. Nothing may panic; one datagram grows the
// heap by at most one chunk of storage plus its bookkeeping
// (fuzzHeapPerDatagram), and the receive budget held never passes
// RecvBudget.
func FuzzHandle(f *testing.F) {
	f.Add(uint8(wire.Data), uint32(1000), uint64(1<<30), uint32(5), uint64(0), uint64(0), []byte("x"))
	f.Add(uint8(wire.Data), uint32(300), uint64(301), uint32(1), uint64(0), uint64(3), []byte("y"))
	f.Add(uint8(wire.Abort), uint32(0), uint64(0), uint32(0), uint64(0), uint64(1), []byte{})
	f.Add(uint8(wire.Ack), uint32(0), uint64(0), uint32(0), uint64(0), uint64(0), make([]byte, 24))
	f.Add(uint8(wire.Busy), uint32(0), uint64(0), uint32(0), uint64(7), uint64(9), []byte{})
	f.Add(uint8(wire.Data), uint32(1200), uint64(8<<20), uint32(3), uint64(1), uint64(2), []byte("z"))
	f.Add(uint8(wire.Refuse), uint32(0), uint64(1<<20), uint32(0), uint64(3), uint64(4), []byte{})
	subs := []wire.Sub{{SrcThread: 0, DstThread: 0, Tag: 1, Len: 3}, {SrcThread: 1, DstThread: 2, Tag: -1, Len: 64, Flags: wire.FlagAckNow}}
	f.Add(uint8(fuzzBundle|wire.Data), uint32(1000), uint64(0), uint32(0), uint64(5), uint64(9), fuzzSubs(subs))
	f.Add(uint8(fuzzBundle|fuzzBundleAck|wire.Data), uint32(64), uint64(3), uint32(0), uint64(0), uint64(0), fuzzSubs(subs[1:]))
	f.Add(uint8(fuzzBundle|wire.Data), uint32(2), uint64(0), uint32(0), uint64(63), uint64(8191), fuzzSubs(append(subs, subs...)))
	// Rendezvous control messages (fuzzRndv): a withdrawal of an
	// announcement never made, its answers, and a malformed one, after
	// an abort of message 1 (left unfinished above), so that they are
	// delivered.
	f.Add(uint8(wire.Abort), uint32(0), uint64(0), uint32(0), uint64(1), uint64(5), []byte{})
	withdraw := []byte{rndvWithdraw, 1, 0, 0, 0, 0, 0, 0, 0}
	f.Add(uint8(fuzzRndv|wire.Data), uint32(1000), uint64(9), uint32(0), uint64(2), uint64(6), withdraw)
	f.Add(uint8(fuzzRndv|wire.Data), uint32(1000), uint64(9), uint32(0), uint64(3), uint64(7), []byte{rndvWithdrawn, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint8(fuzzRndv|wire.Data), uint32(1000), uint64(9), uint32(0), uint64(4), uint64(8), []byte{rndvTaken, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint8(fuzzRndv|wire.Data), uint32(1000), uint64(3), uint32(0), uint64(7), uint64(10), withdraw[:3])
	n := mem.NewNetwork()
	a, _ := n.Listen("fa")
	b, _ := n.Listen("fb")
	fuzzHandle(f, a, b, 0)
}

// FuzzHandleReliable is FuzzHandle on a port of the reliable path (a
// fabric.Holder, protected), every Data and Abort datagram marked
// wire.FlagReliable: whole messages, fragments and bundles of the reliable
// path with forged geometry, order and overlaps.
func FuzzHandleReliable(f *testing.F) {
	f.Add(uint8(wire.Data), uint32(1000), uint64(250), uint32(0), uint64(0), uint64(0), []byte("x"))
	f.Add(uint8(wire.Data), uint32(300), uint64(301), uint32(1), uint64(1), uint64(1), []byte("y"))
	f.Add(uint8(wire.Data), uint32(1200), uint64(8<<20), uint32(3), uint64(2), uint64(2), []byte("z"))
	f.Add(uint8(wire.Abort), uint32(0), uint64(0), uint32(0), uint64(2), uint64(3), []byte{})
	subs := []wire.Sub{{SrcThread: 0, DstThread: 0, Tag: 1, Len: 3}, {SrcThread: 1, DstThread: 2, Tag: -1, Len: 64, Flags: wire.FlagAckNow}}
	f.Add(uint8(fuzzBundle|wire.Data), uint32(1000), uint64(0), uint32(0), uint64(5), uint64(9), fuzzSubs(subs))
	f.Add(uint8(fuzzBundle|wire.Data), uint32(2), uint64(0), uint32(0), uint64(63), uint64(8191), fuzzSubs(append(subs, subs...)))
	f.Add(uint8(fuzzRndv|wire.Data), uint32(1000), uint64(9), uint32(0), uint64(7), uint64(6), []byte{rndvWithdraw, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint8(fuzzRndv|wire.Data), uint32(1000), uint64(3), uint32(0), uint64(8), uint64(10), []byte{rndvWithdraw, 1, 0})
	a, b := legPorts(fabric.Reliable | fabric.Protected)
	fuzzHandle(f, a, b, wire.FlagReliable)
}

// fuzzHandle runs FuzzHandle's datagrams through the dispatcher of port a,
// as sent by process 1 from b, with reliable (0 or wire.FlagReliable) set
// on every Data and Abort datagram.
func fuzzHandle(f *testing.F, a, b fabric.Port, reliable uint8) {
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
		var flags uint8
		var ackCum uint64
		if kind&(fuzzBundle|fuzzRndv) == fuzzRndv {
			flags, kind = wire.FlagRendezvous, kind&^fuzzRndv
		}
		if kind&fuzzBundle != 0 {
			if fragSize == 0 || fragSize > wire.MaxFragment-wire.HeaderSize {
				return
			}
			if kind&fuzzBundleAck != 0 {
				flags, ackCum = wire.FlagAck, total%64
			}
			var n uint32
			if body, total, n = fuzzBundleBody(body, fragSize); n == 0 {
				return
			}
			kind, idx, flags = uint8(wire.Data), n, flags|wire.FlagBundle
		} else if kind == uint8(wire.Data) && uint64(len(body)) != wire.FragLen(total, fragSize, idx) {
			// Make the geometry consistent often enough to reach reassembly.
			if fragSize == 0 || fragSize > wire.MaxFragment-wire.HeaderSize {
				return
			}
			body = make([]byte, wire.FragLen(total, fragSize, idx))
		}
		if kind == uint8(wire.Data) || kind == uint8(wire.Abort) {
			flags |= reliable
		}
		h := wire.Header{Kind: wire.Kind(kind), Flags: flags, AckCum: ackCum, JobKey: 1, SrcProc: 1, DstProc: 0, FragSize: fragSize,
			Total: total, FragIndex: idx, MsgID: msgID % 64, Seq: seq % 8192}
		pkt := make([]byte, wire.HeaderSize+len(body))
		h.Encode(pkt[:wire.HeaderSize], body)
		copy(pkt[wire.HeaderSize:], body)
		if flags&wire.FlagBundle != 0 {
			if _, _, err := wire.DecodeProtected(pkt, 1); err != nil {
				t.Fatalf("bundle built refused: %v", err)
			}
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.HeapAlloc
		// A batch of its own (as handleBatch).
		d.batchAt = 0
		d.beginBatch()
		if d.handle(pkt); d.held {
			d.hold(0) // back in the fabric, which gives it up here
		}
		d.endBatch()
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

// In FuzzHandle, a kind with fuzzBundle set sends a bundle built by
// fuzzBundleBody, with a piggybacked acknowledgement if fuzzBundleAck is
// set too; one with fuzzRndv alone sends a message of the rendezvous
// protocol (wire.FlagRendezvous).
const (
	fuzzBundle    = 0x80
	fuzzBundleAck = 0x40
	fuzzRndv      = 0x20
)

// fuzzBundleBody makes of the fuzzer's bytes b the body of a well-formed
// bundle whose messages fit fragSize: each sub-header is taken as it comes
// but for its length (cut to what follows and to fragSize) and flags (cut
// to those allowed). It returns the body, the messages' total and their
// count, 0 if b holds no sub-header.
func fuzzBundleBody(b []byte, fragSize uint32) (body []byte, total uint64, n uint32) {
	for len(b) >= wire.SubSize && n < wire.MaxBundled {
		s := wire.Sub{
			SrcThread: binary.LittleEndian.Uint32(b[0:]),
			DstThread: binary.LittleEndian.Uint32(b[4:]),
			Tag:       int32(binary.LittleEndian.Uint32(b[8:])),
			Len:       binary.LittleEndian.Uint16(b[12:]),
			Flags:     b[14] & wire.FlagAckNow,
		}
		b = b[wire.SubSize:]
		s.Len = uint16(min(int(s.Len), len(b), int(fragSize)))
		var sb [wire.SubSize]byte
		s.Put(sb[:])
		body = append(body, sb[:]...)
		body = append(body, b[:s.Len]...)
		b = b[s.Len:]
		total += uint64(s.Len)
		n++
	}
	return body, total, n
}

// fuzzSubs is a FuzzHandle body for the sub-headers subs, each followed by
// its Len bytes.
func fuzzSubs(subs []wire.Sub) []byte {
	var b []byte
	for i, s := range subs {
		var sb [wire.SubSize]byte
		s.Put(sb[:])
		b = append(b, sb[:]...)
		for j := 0; j < int(s.Len); j++ {
			b = append(b, byte(i+j))
		}
	}
	return b
}
