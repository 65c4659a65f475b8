//go:build linux

package shm

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestReadShared checks a read shared by two threads (readShared): every
// byte of the message arrives, whichever thread read its chunk, nothing
// outside the destination is written, and a chunk that fails fails the
// read without holding it.
func TestReadShared(t *testing.T) {
	if !readsSelf() {
		t.Skip("this process may not read its own memory (process_vm_readv refused)")
	}
	sizes := []int{splitMin, splitMin + 1, 3*splitChunk - 1, 2<<20 + 12345}
	for round := 0; round < 20; round++ {
		for k, n := range sizes {
			src := positions(n, round*len(sizes)+k)
			buf := make([]byte, n+2)
			buf[0], buf[n+1] = 0xa5, 0x5a
			dst := buf[1 : n+1]
			if err := readShared(os.Getpid(), dst, addrOf(src)); err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			if !bytes.Equal(dst, src) {
				i := 0
				for i < n && dst[i] == src[i] {
					i++
				}
				t.Fatalf("%d bytes, round %d: first wrong byte at %d (chunk %d)", n, round, i, i/splitChunk)
			}
			if buf[0] != 0xa5 || buf[n+1] != 0x5a {
				t.Fatalf("%d bytes: written outside the destination", n)
			}
		}
	}

	// The last chunk of the source may not be read: the read fails.
	n := 4 * splitChunk
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[3*splitChunk:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 20; round++ {
		if err := readShared(os.Getpid(), make([]byte, n), addrOf(mem)); err == nil {
			t.Fatal("a read of memory partly unreadable succeeded")
		}
	}
}

// readsSelf reports whether this process may read its own memory with
// process_vm_readv.
func readsSelf() bool {
	var src, dst uint64 = 42, 0
	err := readFrom(os.Getpid(), unsafe.Slice((*byte)(unsafe.Pointer(&dst)), 8), uint64(uintptr(unsafe.Pointer(&src))))
	return err == nil && dst == src
}

// addrOf is the address of b's first byte, as process_vm_readv takes it.
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// positions returns n bytes that tell their offset (a little-endian word
// of offset and seed every 4 bytes): a chunk read from or into the wrong
// place shows.
func positions(n, seed int) []byte {
	b := make([]byte, n+3)
	for i := 0; i < n; i += 4 {
		v := uint32(i*2654435761) ^ uint32(seed)
		b[i], b[i+1], b[i+2], b[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return b[:n]
}
