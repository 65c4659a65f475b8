package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cespare/xxhash/v2"
)

const key = 0x1234567890abcdef

func encode(h Header, body []byte) []byte {
	pkt := make([]byte, HeaderSize+len(body))
	h.Encode(pkt[:HeaderSize], body)
	copy(pkt[HeaderSize:], body)
	return pkt
}

func TestRoundTrip(t *testing.T) {
	body := []byte("fragment payload")
	h := Header{Kind: Data, Flags: FlagAckNow, Hops: 3, JobKey: key, SrcProc: 1, SrcThread: 2, DstProc: 3,
		DstThread: 4, Tag: -5, FragSize: 16, MsgID: 6, Seq: 7, Total: 40, FragIndex: 1}
	pkt := encode(h, body)
	got, b, err := Decode(pkt, key)
	if err != nil {
		t.Fatal(err)
	}
	h.BodyLen = uint32(len(body))
	if got != h || !bytes.Equal(b, body) {
		t.Fatalf("got %+v %q", got, b)
	}
}

func TestRejects(t *testing.T) {
	good := Header{Kind: Data, JobKey: key, FragSize: 100, Total: 250, FragIndex: 2}
	body := make([]byte, 50)
	cases := []struct {
		name string
		pkt  func() []byte
		want error
	}{
		{"short", func() []byte { return make([]byte, HeaderSize-1) }, ErrShort},
		{"magic", func() []byte { p := encode(good, body); p[0] ^= 1; return p }, ErrMagic},
		{"version", func() []byte { p := encode(good, body); p[2] = 9; return p }, ErrVersion},
		{"jobkey", func() []byte { h := good; h.JobKey = 1; return encode(h, body) }, ErrJobKey},
		{"checksum", func() []byte { p := encode(good, body); p[HeaderSize+3] ^= 0x40; return p }, ErrChecksum},
		{"truncated", func() []byte { p := encode(good, body); return p[:len(p)-1] }, ErrLength},
		{"index past end", func() []byte { h := good; h.FragIndex = 3; return encode(h, body) }, ErrLength},
		{"wrong body length", func() []byte { return encode(good, body[:49]) }, ErrLength},
		{"zero frag size", func() []byte { h := good; h.FragSize = 0; return encode(h, body) }, ErrLength},
		{"kind", func() []byte { h := good; h.Kind = 99; return encode(h, body) }, ErrKind},
	}
	for _, c := range cases {
		if _, _, err := Decode(c.pkt(), key); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

func TestFragGeometry(t *testing.T) {
	if FragCount(0, 100) != 1 || FragCount(100, 100) != 1 || FragCount(101, 100) != 2 {
		t.Fatal("FragCount")
	}
	if FragLen(250, 100, 2) != 50 || FragLen(250, 100, 0) != 100 || FragLen(0, 100, 0) != 0 {
		t.Fatal("FragLen")
	}
}

func TestAckRoundTrip(t *testing.T) {
	a := AckBody{Cum: 10, Window: 4096, NSack: 2, Echo: 20}
	a.Sack[0] = SackBlock{12, 15}
	a.Sack[1] = SackBlock{18, 21}
	b := a.Put(make([]byte, AckBodyLen(MaxSackBlocks)))
	got, err := DecodeAck(b)
	if err != nil || got != a {
		t.Fatalf("got %+v %v", got, err)
	}
	// Blocks must be ordered and above the cumulative point.
	bad := a
	bad.Sack[1] = SackBlock{13, 14}
	if _, err := DecodeAck(bad.Put(make([]byte, AckBodyLen(2)))); err == nil {
		t.Fatal("overlapping blocks accepted")
	}
	if _, err := DecodeAck(b[:len(b)-1]); err == nil {
		t.Fatal("short ack accepted")
	}
}

func BenchmarkEncodeDecode64K(b *testing.B) {
	body := make([]byte, MaxFragment-HeaderSize)
	h := Header{Kind: Data, JobKey: key, FragSize: uint32(len(body)), Total: uint64(len(body))}
	pkt := make([]byte, HeaderSize+len(body))
	copy(pkt[HeaderSize:], body)
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.Seq = uint64(i)
		h.Encode(pkt[:HeaderSize], pkt[HeaderSize:])
		if _, _, err := Decode(pkt, key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeDecodeSmall(b *testing.B) {
	body := make([]byte, 64)
	h := Header{Kind: Data, JobKey: key, FragSize: 1000, Total: 64}
	pkt := make([]byte, HeaderSize+len(body))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.Seq = uint64(i)
		h.Encode(pkt[:HeaderSize], pkt[HeaderSize:])
		if _, _, err := Decode(pkt, key); err != nil {
			b.Fatal(err)
		}
	}
}

// A gateway rewrites the hop count only; the datagram still decodes, with
// the new count, and every other byte is unchanged.
func TestSetHops(t *testing.T) {
	body := []byte("forwarded")
	h := Header{Kind: Data, Hops: DefaultHops, JobKey: key, FragSize: 64, Total: uint64(len(body))}
	pkt := encode(h, body)
	before := bytes.Clone(pkt)
	SetHops(pkt, DefaultHops-1)
	got, _, err := Decode(pkt, key)
	if err != nil {
		t.Fatalf("after SetHops: %v", err)
	}
	if got.Hops != DefaultHops-1 {
		t.Fatalf("hops %d, want %d", got.Hops, DefaultHops-1)
	}
	n := 0
	for i := range pkt {
		if pkt[i] != before[i] {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("SetHops changed %d bytes, want 1", n)
	}
}

// TestReliableChecksum: a datagram marked FlagReliable is checked over its
// header alone (its fabric protects the body), and setting or clearing
// the flag in transit is still caught.
func TestReliableChecksum(t *testing.T) {
	h := Header{Kind: Data, Flags: FlagReliable, JobKey: key, FragSize: 100, Total: 250, FragIndex: 2}
	body := make([]byte, 50)
	pkt := encode(h, body)
	pkt[HeaderSize+3] ^= 0x40
	if _, _, err := Decode(pkt, key); err != nil {
		t.Fatalf("body of a reliable datagram checked: %v", err)
	}
	pkt[HeaderSize+3] ^= 0x40
	pkt[20] ^= 1
	if _, _, err := Decode(pkt, key); !errors.Is(err, ErrChecksum) {
		t.Fatalf("header of a reliable datagram not checked: %v", err)
	}
	pkt[20] ^= 1
	pkt[4] &^= FlagReliable
	if _, _, err := Decode(pkt, key); !errors.Is(err, ErrChecksum) {
		t.Fatalf("flag cleared in transit not caught: %v", err)
	}
}

// The checksum of a header and a body is the hash of the two written in
// turn, whatever the body's length (a small body is hashed in one call
// from a copy, a large one in pieces): datagrams of builds that hash
// either way check alike.
func TestChecksumPieces(t *testing.T) {
	head := make([]byte, HeaderSize)
	for i := range head {
		head[i] = byte(i*7 + 1)
	}
	zeroed := bytes.Clone(head)
	zeroed[hopsOffset] = 0
	clear(zeroed[72:80])
	body := make([]byte, 3*smallSummed)
	for i := range body {
		body[i] = byte(i*13 + 5)
	}
	for n := 0; n <= len(body); n++ {
		d := xxhash.New()
		d.Write(zeroed)
		d.Write(body[:n])
		if got, want := checksum(head, body[:n]), d.Sum64(); got != want {
			t.Fatalf("body of %d bytes: checksum %#x, want %#x", n, got, want)
		}
	}
}

// BenchmarkEncodeDecodeReliable encodes and decodes the datagram of a
// 1-byte message on the reliable path (body not summed).
func BenchmarkEncodeDecodeReliable(b *testing.B) {
	body := make([]byte, 1)
	h := Header{Kind: Data, Flags: FlagReliable, JobKey: key, FragSize: 1000, Total: 1}
	pkt := make([]byte, HeaderSize+len(body))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.Seq = uint64(i)
		h.Encode(pkt[:HeaderSize], pkt[HeaderSize:])
		if _, _, err := Decode(pkt, key); err != nil {
			b.Fatal(err)
		}
	}
}
