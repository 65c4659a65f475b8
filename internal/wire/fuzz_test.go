package wire

import "testing"

// FuzzDecode feeds arbitrary datagrams to the decoders: they must never
// panic, and whatever they accept must be self-consistent and re-encode to
// the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(encode(Header{Kind: Data, JobKey: key, FragSize: 100, Total: 250, FragIndex: 2}, make([]byte, 50)))
	f.Add(encode(Header{Kind: Data, JobKey: key, FragSize: 65000, Total: 0}, nil))
	a := AckBody{Cum: 3, Window: 64, NSack: 1, Echo: 9}
	a.Sack[0] = SackBlock{5, 9}
	f.Add(encode(Header{Kind: Ack, JobKey: key}, a.Put(make([]byte, AckBodyLen(1)))))
	f.Add(encode(Header{Kind: Busy, JobKey: key, Seq: 4}, nil))
	f.Add(encode(Header{Kind: Data, Flags: FlagReliable, JobKey: key, FragSize: 100, Total: 250, FragIndex: 1}, make([]byte, 100)))
	f.Add([]byte("not a pcor datagram"))
	// A rendezvous withdrawal (internal/engine, rndv.go), on either path.
	withdraw := []byte{3, 1, 0, 0, 0, 0, 0, 0, 0}
	f.Add(encode(Header{Kind: Data, Flags: FlagRendezvous, JobKey: key, FragSize: 9, Total: 9}, withdraw))
	f.Add(encode(Header{Kind: Data, Flags: FlagRendezvous | FlagReliable, JobKey: key, FragSize: 9, Total: 9}, withdraw))
	subs := []Sub{{SrcThread: 1, DstThread: 2, Tag: 3}, {SrcThread: 1, DstThread: 2, Tag: 3, Flags: FlagAckNow}}
	f.Add(bundle(Header{JobKey: key, FragSize: 1000, MsgID: 5, Seq: 9}, subs, [][]byte{make([]byte, 64), []byte("x")}))
	f.Add(bundle(Header{JobKey: key, Flags: FlagAck | FlagBodyUnsummed, FragSize: 64}, subs[:1], [][]byte{{}}))
	f.Add(bundle(Header{JobKey: key, Flags: FlagReliable, FragSize: 1000, MsgID: 7}, subs[:1], [][]byte{make([]byte, 64)}))
	f.Add(encode(Header{Kind: Data, Flags: FlagBodyUnsummed, JobKey: key, FragSize: 100, Total: 250, FragIndex: 2}, make([]byte, 50)))
	unsealed := make([]byte, HeaderSize, HeaderSize+3)
	(&Header{Kind: Data, Flags: FlagBodyUnsummed, JobKey: key, FragSize: 3, Total: 3}).EncodeUnsealed(unsealed, []byte{1, 2, 3})
	f.Add(append(unsealed, 1, 2, 3))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		hh, herr := DecodeHead(pkt, len(pkt), key)
		h, body, err := Decode(pkt, key)
		if herr == nil && (err != nil || hh != h) {
			t.Fatalf("DecodeHead accepted %+v, Decode %+v, %v", hh, h, err)
		}
		// What Decode accepts, DecodeProtected (which verifies less) does.
		hp, bp, perr := DecodeProtected(pkt, key)
		if err == nil && (perr != nil || hp != h) {
			t.Fatalf("Decode accepted %+v, DecodeProtected %+v, %v", h, hp, perr)
		}
		// DecodeProtectedTo is DecodeProtected into a header of the caller's.
		var ht Header
		bt, terr := DecodeProtectedTo(&ht, pkt, key)
		if terr != perr || perr == nil && (ht != hp || len(bt) != len(bp)) {
			t.Fatalf("DecodeProtected %+v, %d, %v; DecodeProtectedTo %+v, %d, %v", hp, len(bp), perr, ht, len(bt), terr)
		}
		if err != nil {
			return
		}
		if int(h.BodyLen) != len(body) || len(pkt) != HeaderSize+len(body) {
			t.Fatalf("lengths: %+v body %d pkt %d", h, len(body), len(pkt))
		}
		if h.Flags&FlagBundle != 0 {
			checkBundleAccepted(t, &h, body)
		} else if h.Kind == Data {
			if uint64(h.FragIndex) >= FragCount(h.Total, h.FragSize) || uint64(len(body)) != FragLen(h.Total, h.FragSize, h.FragIndex) {
				t.Fatalf("geometry accepted: %+v", h)
			}
		}
		if h.Kind == Ack {
			if a, err := DecodeAck(body); err == nil {
				prev := a.Cum
				for i := 0; i < int(a.NSack); i++ {
					if a.Sack[i].Start <= prev || a.Sack[i].End <= a.Sack[i].Start {
						t.Fatalf("bad blocks accepted: %+v", a)
					}
					prev = a.Sack[i].End
				}
			}
		}
		again := make([]byte, len(pkt))
		h.Encode(again[:HeaderSize], body)
		copy(again[HeaderSize:], body)
		// Reserved bytes are not preserved; compare what is.
		again[6], again[7] = pkt[6], pkt[7]
		if h2, _, err := Decode(again, key); err != nil && pkt[6] == 0 && pkt[7] == 0 || err == nil && h2 != h {
			t.Fatalf("re-encode differs: %v", err)
		}
	})
}

// checkBundleAccepted fails t unless the accepted bundle h splits into its
// count of messages that fill its body, each fitting one fragment, with
// their own headers valid.
func checkBundleAccepted(t *testing.T, h *Header, body []byte) {
	if h.Kind != Data || h.FragIndex == 0 || h.FragIndex > MaxBundled {
		t.Fatalf("bundle accepted: %+v", h)
	}
	var total uint64
	u := *h
	for i := 0; i < int(h.FragIndex); i++ {
		s, data, rest, err := NextSub(body)
		if err != nil {
			t.Fatalf("message %d of an accepted bundle: %v", i, err)
		}
		m := h.Message(i, &s)
		if udata, urest, ok := u.Unbundle(h, i, body); !ok || u != m || len(udata) != len(data) || len(urest) != len(rest) {
			t.Fatalf("message %d of an accepted bundle: Unbundle gave %+v, %d bytes, %v; Message %+v, %d bytes", i, u, len(udata), ok, m, len(data))
		}
		if m.Flags&FlagBundle != 0 || uint64(len(data)) != FragLen(m.Total, m.FragSize, 0) || int(m.BodyLen) != len(data) {
			t.Fatalf("message %d of an accepted bundle: %+v with %d bytes", i, m, len(data))
		}
		total += m.Total
		body = rest
	}
	if len(body) != 0 || total != h.Total {
		t.Fatalf("bundle accepted with %d bytes left, %d of %d", len(body), total, h.Total)
	}
}
