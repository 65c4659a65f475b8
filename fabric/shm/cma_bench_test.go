//go:build linux

package shm

import (
	"os"
	"testing"
	"unsafe"
)

// BenchmarkCMARead2MiB reads 2 MiB with process_vm_readv (from this
// process: the kernel's copy is the same), beside BenchmarkMemmove2MiB:
// the single copy's own speed, below any engine.
func BenchmarkCMARead2MiB(b *testing.B) {
	src, dst := make([]byte, 2<<20), make([]byte, 2<<20)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		if err := readFrom(os.Getpid(), dst, uint64(uintptr(unsafe.Pointer(&src[0])))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemmove2MiB(b *testing.B) {
	src, dst := make([]byte, 2<<20), make([]byte, 2<<20)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		copy(dst, src)
	}
}

// BenchmarkCMARead2MiBHuge is BenchmarkCMARead2MiB between buffers from
// Port.Alloc, which asks for transparent huge pages.
func BenchmarkCMARead2MiBHuge(b *testing.B) {
	p := &Port{}
	src, dst := p.Alloc(2<<20), p.Alloc(2<<20)
	clear(src)
	clear(dst)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		if err := readFrom(os.Getpid(), dst, uint64(uintptr(unsafe.Pointer(&src[0])))); err != nil {
			b.Fatal(err)
		}
	}
}
