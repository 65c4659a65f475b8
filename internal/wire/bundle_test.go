package wire

import (
	"bytes"
	"errors"
	"testing"
)

// bundle encodes the messages msgs (sub-headers from subs) as one bundle
// datagram with header h.
func bundle(h Header, subs []Sub, msgs [][]byte) []byte { return bundleFix(h, subs, msgs, nil) }

// bundleFix is bundle with fix applied to the header before it is encoded.
func bundleFix(h Header, subs []Sub, msgs [][]byte, fix func(*Header)) []byte {
	var body []byte
	var total uint64
	for i, m := range msgs {
		s := subs[i]
		s.Len = uint16(len(m))
		var sb [SubSize]byte
		s.Put(sb[:])
		body = append(body, sb[:]...)
		body = append(body, m...)
		total += uint64(len(m))
	}
	h.Kind = Data
	h.Flags |= FlagBundle
	h.Total = total
	h.FragIndex = uint32(len(msgs))
	if fix != nil {
		fix(&h)
	}
	return encode(h, body)
}

func TestBundleRoundTrip(t *testing.T) {
	msgs := [][]byte{[]byte("one"), {}, bytes.Repeat([]byte{7}, 64)}
	subs := []Sub{{SrcThread: 1, DstThread: 2, Tag: -3}, {SrcThread: 4, DstThread: 5, Tag: 6, Flags: FlagAckNow},
		{SrcThread: 7, DstThread: 8, Tag: 9}}
	h := Header{JobKey: key, SrcProc: 10, DstProc: 11, Flags: FlagAck, AckCum: 12, FragSize: 1000, MsgID: 100,
		Seq: 200, SrcInc: 13, DstInc: 14}
	got, body, err := Decode(bundle(h, subs, msgs), key)
	if err != nil {
		t.Fatal(err)
	}
	if got.FragIndex != 3 || got.Total != 67 {
		t.Fatalf("bundle header %+v", got)
	}
	for i := range msgs {
		s, data, rest, err := NextSub(body)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		body = rest
		m := got.Message(i, &s)
		want := Header{Kind: Data, Flags: FlagAck | subs[i].Flags, JobKey: key, SrcProc: 10, SrcThread: subs[i].SrcThread,
			DstProc: 11, DstThread: subs[i].DstThread, Tag: subs[i].Tag, FragSize: 1000, MsgID: 100 + uint64(i),
			Seq: 200 + uint64(i), Total: uint64(len(msgs[i])), BodyLen: uint32(len(msgs[i])), SrcInc: 13, DstInc: 14,
			AckCum: 12}
		if m != want || !bytes.Equal(data, msgs[i]) {
			t.Fatalf("message %d: got %+v %q, want %+v %q", i, m, data, want, msgs[i])
		}
	}
	if len(body) != 0 {
		t.Fatalf("%d bytes left over", len(body))
	}
}

// Unbundle, reusing one header for all the messages of a bundle, gives
// each the header and bytes NextSub and Message give it, and refuses a
// sub-header with unknown flags or a length past the body's end.
func TestUnbundle(t *testing.T) {
	msgs := [][]byte{[]byte("one"), {}, bytes.Repeat([]byte{7}, 64), []byte("four")}
	subs := []Sub{{SrcThread: 1, DstThread: 2, Tag: -3}, {SrcThread: 4, DstThread: 5, Tag: 6, Flags: FlagAckNow},
		{SrcThread: 7, DstThread: 8, Tag: 9}, {SrcThread: 10, DstThread: 11, Tag: 12}}
	h0 := Header{JobKey: key, SrcProc: 10, DstProc: 11, Flags: FlagAck | FlagReliable, AckCum: 12, FragSize: 1000,
		MsgID: 100, Seq: 200, SrcInc: 13, DstInc: 14, Hops: 3}
	h, body, err := Decode(bundle(h0, subs, msgs), key)
	if err != nil {
		t.Fatal(err)
	}
	m := h
	all := body
	for i := range msgs {
		s, wdata, wrest, err := NextSub(body)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		want := h.Message(i, &s)
		data, rest, ok := m.Unbundle(&h, i, body)
		if !ok || m != want || !bytes.Equal(data, wdata) || len(rest) != len(wrest) {
			t.Fatalf("message %d: got %+v %q %v, want %+v %q", i, m, data, ok, want, wdata)
		}
		body = rest
	}
	bad := func(name string, fix func(b []byte) []byte) {
		b := fix(append([]byte(nil), all...))
		if _, _, ok := m.Unbundle(&h, 0, b); ok {
			t.Errorf("%s: accepted", name)
		}
	}
	bad("short", func(b []byte) []byte { return b[:SubSize-1] })
	bad("flags", func(b []byte) []byte { b[14] = FlagAck; return b })
	bad("length", func(b []byte) []byte { b[12], b[13] = 0xff, 0xff; return b })
	bad("length by one", func(b []byte) []byte { return b[:SubSize+len(msgs[0])-1] })
}

func TestBundleRejects(t *testing.T) {
	good := Header{JobKey: key, FragSize: 100}
	subs := []Sub{{Tag: 1}, {Tag: 2}}
	msgs := [][]byte{[]byte("abc"), []byte("de")}
	cases := []struct {
		name string
		pkt  func() []byte
	}{
		{"retransmitted", func() []byte { h := good; h.Flags = FlagRetransmit; return bundle(h, subs, msgs) }},
		{"rendezvous", func() []byte { h := good; h.Flags = FlagRendezvous; return bundle(h, subs, msgs) }},
		{"ack now on the bundle", func() []byte { h := good; h.Flags = FlagAckNow; return bundle(h, subs, msgs) }},
		{"zero frag size", func() []byte { h := good; h.FragSize = 0; return bundle(h, subs, msgs) }},
		{"message over frag size", func() []byte { h := good; h.FragSize = 2; return bundle(h, subs, msgs) }},
		{"count too high", func() []byte { return bundleFix(good, subs, msgs, func(h *Header) { h.FragIndex = 3 }) }},
		{"count zero", func() []byte { return bundleFix(good, subs, msgs, func(h *Header) { h.FragIndex = 0 }) }},
		{"count too low", func() []byte { return bundleFix(good, subs, msgs, func(h *Header) { h.FragIndex = 1 }) }},
		{"total wrong", func() []byte { return bundleFix(good, subs, msgs, func(h *Header) { h.Total = 4 }) }},
		{"not data", func() []byte { return bundleFix(good, subs, msgs, func(h *Header) { h.Kind = Abort }) }},
		{"length past end", func() []byte {
			p := bundle(good, subs, msgs)
			p[HeaderSize+SubSize+3+12] = 9 // the second message's length
			Seal(p[:HeaderSize], p[HeaderSize:])
			return p
		}},
		{"sub flags", func() []byte { s := []Sub{{Flags: FlagRetransmit}, {}}; return bundle(good, s, msgs) }},
		{"truncated sub-header", func() []byte {
			p := bundle(good, subs[:1], msgs[:1])
			return encode(rawHeaderOf(p), append(p[HeaderSize:], make([]byte, SubSize-1)...))
		}},
	}
	for _, c := range cases {
		if _, _, err := Decode(c.pkt(), key); !errors.Is(err, ErrLength) {
			t.Errorf("%s: got %v, want %v", c.name, err, ErrLength)
		}
	}
	if _, _, err := Decode(bundle(good, subs, msgs), key); err != nil {
		t.Fatalf("the good bundle: %v", err)
	}
}

// rawHeaderOf is the header of the valid datagram pkt.
func rawHeaderOf(pkt []byte) Header {
	h, _, err := Decode(pkt, key)
	if err != nil {
		panic(err)
	}
	return h
}

// TestReliableBundle: a bundle of the reliable path decodes, its body not
// summed, and each of its messages keeps FlagReliable.
func TestReliableBundle(t *testing.T) {
	msgs := [][]byte{[]byte("one"), bytes.Repeat([]byte{7}, 64)}
	subs := []Sub{{SrcThread: 1, DstThread: 2, Tag: 3}, {SrcThread: 1, DstThread: 2, Tag: 3}}
	pkt := bundle(Header{JobKey: key, Flags: FlagReliable, FragSize: 1000, MsgID: 40}, subs, msgs)
	pkt[len(pkt)-1] ^= 1 // the fabric protects the body: not summed
	h, body, err := Decode(pkt, key)
	if err != nil {
		t.Fatal(err)
	}
	for i := range msgs {
		s, _, rest, err := NextSub(body)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		body = rest
		if m := h.Message(i, &s); m.Flags != FlagReliable || m.MsgID != 40+uint64(i) {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
}
