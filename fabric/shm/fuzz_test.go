package shm

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// fuzzRingSize is the ring of FuzzRingTake: small, so that the fuzzer's
// bytes cover it and its wrap.
const fuzzRingSize = 1 << 10

// alignedBytes returns n zero bytes starting on a cache line, as a mapped
// segment's do (ring words are read atomically, 8 bytes at a time).
func alignedBytes(n int) []byte {
	buf := make([]byte, n+lineSize)
	off := int(-uintptr(unsafe.Pointer(&buf[0]))) & (lineSize - 1)
	return buf[off : off+n : off+n]
}

// FuzzRingTake: a ring holds whatever its producer, another process,
// wrote. The consumer's take must never panic nor hand out a record that
// does not lie inside the ring or is longer than the datagram limit; bytes
// that cannot be records end the ring (corrupt), and records put by a
// producer are taken back whole and in order.
func FuzzRingTake(f *testing.F) {
	// Real rings: records of various lengths, one wrapping to the start.
	for _, lens := range [][]int{{0}, {1, 2, 3}, {100, 200, 300, 50}, {600, 300}, {fuzzRingSize / 4, fuzzRingSize / 4, 40}} {
		s := fuzzSegment()
		p := newRing(s, 0)
		for i, l := range lens {
			body := make([]byte, l)
			for j := range body {
				body[j] = byte(i + j)
			}
			if !p.put(body[:l/2], body[l/2:]) {
				// Room comes back as the consumer takes.
				store64(s.mem, p.base+slotHead, p.pos)
				p.put(body[:l/2], body[l/2:])
			}
		}
		ring := s.mem[slotOffset(0, fuzzRingSize)+slotHeader:]
		f.Add(append([]byte(nil), ring...), uint16(0), p.pos, uint32(1<<16))
	}
	f.Add([]byte{8, 0, 0, 0, 1, 0, 0, 0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'}, uint16(0), uint64(16), uint32(8))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0}, uint16(0), uint64(8), uint32(100))
	f.Add([]byte{0xf0, 0x3, 0, 0, 1, 0, 0, 0}, uint16(0), ^uint64(0), uint32(1<<20))
	f.Fuzz(func(t *testing.T, data []byte, start uint16, tail uint64, maxLen uint32) {
		s := fuzzSegment()
		r := newRing(s, 0)
		copy(r.data, data)
		// The consumer's own position is always a multiple of 8.
		r.pos = uint64(start) &^ 7
		msgs := make([][]byte, 16)
		at := make([]uint64, len(msgs))
		lo := uintptr(unsafe.Pointer(&r.data[0]))
		hi := lo + uintptr(len(r.data))
		for rounds := 0; rounds < 64; rounds++ {
			pos := r.pos
			n, corrupt := r.take(msgs, at, int(maxLen), tail)
			if n < 0 || n > len(msgs) {
				t.Fatalf("took %d records into %d", n, len(msgs))
			}
			for i, m := range msgs[:n] {
				if uint64(len(m)) > uint64(maxLen) {
					t.Fatalf("record of %d bytes above the %d limit", len(m), maxLen)
				}
				if len(m) > 0 {
					p := uintptr(unsafe.Pointer(&m[0]))
					if p < lo || p+uintptr(len(m)) > hi || cap(m) != len(m) {
						t.Fatalf("record %d of %d bytes at %#x outside the ring [%#x, %#x)", i, len(m), p, lo, hi)
					}
				}
				if at[i] < pos || at[i] >= r.pos {
					t.Fatalf("record %d at %d outside the positions taken [%d, %d)", i, at[i], pos, r.pos)
				}
			}
			if r.pos%8 != 0 {
				t.Fatalf("position %d not a multiple of 8", r.pos)
			}
			if corrupt || n == 0 {
				break
			}
		}
	})
}

// fuzzSegment is a one-slot segment in process memory with a ring of
// fuzzRingSize bytes.
func fuzzSegment() *segment {
	return &segment{mem: alignedBytes(segmentSize(1, fuzzRingSize)), slots: 1, ringSize: fuzzRingSize}
}

// FuzzSegmentCheck: the header of a segment, written by the receiving
// process, is checked before anything in it is used: the check never
// panics, and a header it accepts describes slots and rings that fit the
// segment's size exactly.
func FuzzSegmentCheck(f *testing.F) {
	hdr := func(magic uint64, version, slots, ring uint32) []byte {
		b := make([]byte, 64)
		binary.LittleEndian.PutUint64(b[offMagic:], magic)
		binary.LittleEndian.PutUint32(b[offVersion:], version)
		binary.LittleEndian.PutUint32(b[offSlots:], slots)
		binary.LittleEndian.PutUint32(b[offRingSize:], ring)
		return b
	}
	f.Add(hdr(segMagic, segVersion, 4, MinRingSize), int64(segmentSize(4, MinRingSize)))
	f.Add(hdr(segMagic, segVersion, MaxSlots, MaxRingSize), int64(segmentSize(MaxSlots, MaxRingSize)))
	f.Add(hdr(segMagic, segVersion, 1, MinRingSize+8), int64(segmentSize(1, MinRingSize+8)))
	f.Add(hdr(segMagic, segVersion-1, 4, MinRingSize), int64(segmentSize(4, MinRingSize)))
	f.Add(hdr(segMagic, segVersion, 0xffffffff, 0x80000000), int64(headerSize))
	f.Add(hdr(0, 0, 0, 0), int64(headerSize))
	f.Fuzz(func(t *testing.T, h []byte, size int64) {
		mem := alignedBytes(headerSize)
		copy(mem, h)
		s := &segment{mem: mem, path: "fuzz"}
		err := s.check(int(size))
		if err != nil {
			if !errors.Is(err, ErrBadSegment) {
				t.Fatalf("error %v is not ErrBadSegment", err)
			}
			return
		}
		if s.slots < 1 || s.slots > MaxSlots || s.ringSize < MinRingSize || s.ringSize > MaxRingSize ||
			s.ringSize&(s.ringSize-1) != 0 || int64(segmentSize(s.slots, s.ringSize)) != size {
			t.Fatalf("accepted %d slots of %d bytes in %d bytes", s.slots, s.ringSize, size)
		}
	})
}

// FuzzParseStat: the text of /proc/pid/stat (whose command name the
// process chose) never makes parseStat panic, and it reports a zombie
// only for the state Z or X.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1234 (pcor) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10\n"))
	f.Add([]byte("1 (a) b) (c) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0\n"))
	f.Add([]byte("7 (x) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99999999999999999999999 0\n"))
	f.Add([]byte("no parenthesis"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, zombie := parseStat(b)
		if zombie && !stateZ(b) {
			t.Fatalf("zombie without a Z or X state in %q", b)
		}
	})
}

// stateZ reports whether the state field of a stat text is Z or X.
func stateZ(b []byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			for _, c := range b[i+1:] {
				if c != ' ' && c != '\n' && c != '\t' {
					return c == 'Z' || c == 'X'
				}
			}
			return false
		}
	}
	return false
}

// FuzzParseEndpoint: an endpoint reaches this process from the directory,
// and its name becomes a file name in the segment directory: any text is
// refused with ErrBadEndpoint or gives a name that stays in that directory
// (no separator, no leading dot) and an endpoint that prints back to it.
func FuzzParseEndpoint(f *testing.F) {
	f.Add("3f2a9c1e/pcor-1234-0")
	f.Add("host/../etc")
	f.Add("host/.hidden")
	f.Add("/name")
	f.Add("host/a/b")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEndpoint(s)
		if err != nil {
			if !errors.Is(err, ErrBadEndpoint) {
				t.Fatalf("error %v is not ErrBadEndpoint", err)
			}
			return
		}
		if e.Host == "" || e.Name == "" || e.Name[0] == '.' || strings.ContainsAny(e.Name, "/\x00") || filepath.Base(e.Name) != e.Name {
			t.Fatalf("%q accepted as %+v", s, e)
		}
		if e.String() != s {
			t.Fatalf("%q accepted as %+v, printed %q", s, e, e.String())
		}
	})
}
