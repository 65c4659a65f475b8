package engine

import (
	"testing"
	"unsafe"
)

// TestMCBLayout: a control block is four cache lines of its own, and what
// a small message touches (its arrival, its receive, the block's reuse)
// is in the first three, chunks in the fourth.
func TestMCBLayout(t *testing.T) {
	var m mcb
	if s := unsafe.Sizeof(m); s != 256 {
		t.Fatalf("mcb is %d bytes, want 256", s)
	}
	for name, off := range map[string]uintptr{
		"rndv": unsafe.Offsetof(m.rndv), "chunked": unsafe.Offsetof(m.chunked),
	} {
		if off >= 64 {
			t.Errorf("mcb.%s at %d, not in the first line", name, off)
		}
	}
	for name, off := range map[string]uintptr{
		"frags": unsafe.Offsetof(m.frags), "data": unsafe.Offsetof(m.data),
		"box": unsafe.Offsetof(m.box), "owner": unsafe.Offsetof(m.owner),
		"reserved": unsafe.Offsetof(m.reserved),
	} {
		if off < 64 || off >= 128 {
			t.Errorf("mcb.%s at %d, not in the second line", name, off)
		}
	}
	if off := unsafe.Offsetof(m.spareBox); off >= 192 {
		t.Errorf("mcb.spareBox at %d, not in the first three lines", off)
	}
	if off := unsafe.Offsetof(m.chunks); off < 192 {
		t.Errorf("mcb.chunks at %d, not in the last line", off)
	}
	p := newMCBPool(100000)
	if a := uintptr(unsafe.Pointer(p.at(0))); a%64 != 0 {
		t.Errorf("a segment starts at %#x, not on a cache line", a)
	}
}
