package shm

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestPutSplits: a record whose first cache line is written last (ring.put)
// holds its head and body in order, whatever the lengths of the two and
// wherever the record starts against the ring's cache lines.
func TestPutSplits(t *testing.T) {
	const ringSize = 1 << 12
	buf := make([]byte, segmentSize(1, ringSize)+lineSize)
	// The ring's bytes start on a cache line, as a mapped segment's do.
	off := int(-uintptr(unsafe.Pointer(&buf[0]))) & (lineSize - 1)
	s := &segment{mem: buf[off : off+segmentSize(1, ringSize)], slots: 1, ringSize: ringSize}
	src := make([]byte, 300)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	msgs := make([][]byte, 1)
	at := make([]uint64, 1)
	for _, hl := range []int{0, 1, 7, 8, 40, 55, 56, 57, 63, 64, 65, 96, 120} {
		for _, bl := range []int{0, 1, 2, 9, 30, 63, 64, 100, 150} {
			// Empty records before it start the record at each offset
			// of 8 within a line.
			for fill := 0; fill < lineSize/8; fill++ {
				clear(s.mem)
				p, c := newRing(s, 0), newRing(s, 0)
				for i := 0; i < fill; i++ {
					p.put(nil, nil)
				}
				head, body := src[:hl], src[hl:hl+bl]
				if !p.put(head, body) {
					t.Fatalf("head %d body %d: ring full", hl, bl)
				}
				for i := 0; i < fill; i++ {
					c.take(msgs, at, 1<<16, c.pos)
				}
				n, bad := c.take(msgs, at, 1<<16, c.pos)
				if n != 1 || bad {
					t.Fatalf("head %d body %d after %d: took %d (corrupt %v)", hl, bl, fill, n, bad)
				}
				if want := src[:hl+bl]; !bytes.Equal(msgs[0], want) {
					t.Fatalf("head %d body %d at %d: record %v, want %v", hl, bl, at[0], msgs[0], want)
				}
				if h := *c.header(c.pos); h != 0 {
					t.Fatalf("head %d body %d at %d: header after it %#x, want 0", hl, bl, at[0], h)
				}
			}
		}
	}
}
