package wire

import (
	"errors"
	"testing"
)

// With FlagBodyUnsummed the checksum covers the header alone: a changed
// body passes, a changed header (the flag included) does not. Reseal
// makes the checksum cover the body again.
func TestBodyUnsummed(t *testing.T) {
	h := Header{Kind: Data, JobKey: key, FragSize: 100, Total: 250, FragIndex: 2}
	body := make([]byte, 50)
	flip := func(p []byte, i int) []byte { p[i] ^= 0x40; return p }

	h.Flags = FlagBodyUnsummed
	if _, _, err := Decode(flip(encode(h, body), HeaderSize+3), key); err != nil {
		t.Errorf("unsummed body changed: %v", err)
	}
	if _, _, err := Decode(flip(encode(h, body), 33), key); !errors.Is(err, ErrChecksum) {
		t.Errorf("unsummed, header changed: %v", err)
	}
	// Setting the flag on a datagram summed whole, or clearing it, breaks
	// the checksum: the flag is part of the header summed.
	p := encode(h, body)
	p[4] &^= FlagBodyUnsummed
	if _, _, err := Decode(p, key); !errors.Is(err, ErrChecksum) {
		t.Errorf("flag cleared: %v", err)
	}
	h.Flags = 0
	p = encode(h, body)
	p[4] |= FlagBodyUnsummed
	if _, _, err := Decode(flip(p, HeaderSize+3), key); !errors.Is(err, ErrChecksum) {
		t.Errorf("flag set on a summed datagram: %v", err)
	}

	h.Flags = FlagBodyUnsummed | FlagAck
	p = encode(h, body)
	Reseal(p)
	got, _, err := Decode(p, key)
	if err != nil || got.Flags != FlagAck {
		t.Fatalf("resealed: flags %#x, %v", got.Flags, err)
	}
	if _, _, err := Decode(flip(p, HeaderSize+3), key); !errors.Is(err, ErrChecksum) {
		t.Errorf("resealed, body changed: %v", err)
	}
}

// DecodeHead decodes the header of a datagram whose checksum covers the
// header alone, from its head and length, as Decode does the whole; it
// refuses a header whose checksum covers the body, a length that is not
// the header's, and a short head.
func TestDecodeHead(t *testing.T) {
	h := Header{Kind: Data, Flags: FlagBodyUnsummed, JobKey: key, FragSize: 100, Total: 250, FragIndex: 1}
	p := encode(h, make([]byte, 100))
	want, _, err := Decode(p, key)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeHead(p[:HeaderSize+10], len(p), key); err != nil || got != want {
		t.Errorf("DecodeHead: %+v, %v; want %+v", got, err, want)
	}
	if _, err := DecodeHead(p, len(p)-1, key); !errors.Is(err, ErrLength) {
		t.Errorf("another length: %v", err)
	}
	if _, err := DecodeHead(p[:HeaderSize-1], len(p), key); !errors.Is(err, ErrShort) {
		t.Errorf("short head: %v", err)
	}
	h.Flags = 0
	if _, err := DecodeHead(encode(h, make([]byte, 100)), HeaderSize+100, key); !errors.Is(err, ErrChecksum) {
		t.Errorf("body summed: %v", err)
	}
}

// DecodeProtected, for fabrics that protect their bytes, takes a datagram
// whose checksum covers the header alone without verifying it, and decodes
// it as Decode does; one whose checksum covers the body is verified, and
// the rest of the validation is Decode's.
func TestDecodeProtected(t *testing.T) {
	body := make([]byte, 50)
	for _, f := range []uint8{FlagBodyUnsummed, FlagReliable, FlagBodyUnsummed | FlagAck} {
		h := Header{Kind: Data, Flags: f, JobKey: key, FragSize: 100, Total: 250, FragIndex: 2}
		p := encode(h, body)
		want, _, err := Decode(p, key)
		if err != nil {
			t.Fatal(err)
		}
		clear(p[72:80]) // no checksum at all
		got, b, err := DecodeProtected(p, key)
		if err != nil || got.Flags != want.Flags || got.Total != want.Total || got.FragIndex != want.FragIndex || len(b) != len(body) {
			t.Errorf("flags %#x, checksum cleared: %+v, %d bytes, %v; want %+v", f, got, len(b), err, want)
		}
		if _, _, err := DecodeProtected(p, key+1); !errors.Is(err, ErrJobKey) {
			t.Errorf("flags %#x, another job: %v", f, err)
		}
		if _, _, err := DecodeProtected(p[:len(p)-1], key); !errors.Is(err, ErrLength) {
			t.Errorf("flags %#x, a byte short: %v", f, err)
		}
		if _, _, err := DecodeProtected(p[:HeaderSize-1], key); !errors.Is(err, ErrShort) {
			t.Errorf("flags %#x, short header: %v", f, err)
		}
	}
	// A body the sender summed is verified.
	h := Header{Kind: Data, JobKey: key, FragSize: 100, Total: 250, FragIndex: 2}
	p := encode(h, body)
	if _, _, err := DecodeProtected(p, key); err != nil {
		t.Errorf("summed: %v", err)
	}
	p[HeaderSize+3] ^= 0x40
	if _, _, err := DecodeProtected(p, key); !errors.Is(err, ErrChecksum) {
		t.Errorf("summed, body changed: %v", err)
	}
}

// A datagram encoded unsealed (no checksum) is accepted from a fabric that
// protects its bytes and refused by a decode that verifies the header's
// checksum; a gateway's Reseal makes it acceptable anywhere.
func TestEncodeUnsealed(t *testing.T) {
	h := Header{Kind: Data, Flags: FlagBodyUnsummed, JobKey: key, FragSize: 3, Total: 3, SrcProc: 4, Tag: 9}
	body := []byte{1, 2, 3}
	pkt := make([]byte, HeaderSize, HeaderSize+len(body))
	h.EncodeUnsealed(pkt, body)
	pkt = append(pkt, body...)
	got, b, err := DecodeProtected(pkt, key)
	if err != nil || got.SrcProc != 4 || got.Tag != 9 || got.BodyLen != 3 || string(b) != string(body) {
		t.Fatalf("protected: %+v %v %v", got, b, err)
	}
	if _, _, err := Decode(pkt, key); !errors.Is(err, ErrChecksum) {
		t.Fatalf("verified: %v, want a checksum error", err)
	}
	Reseal(pkt)
	if _, _, err := Decode(pkt, key); err != nil {
		t.Fatalf("resealed: %v", err)
	}
}
