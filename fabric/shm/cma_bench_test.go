//go:build linux

package shm

import (
	"os"
	"testing"
)

// BenchmarkCMARead2MiB reads 2 MiB with process_vm_readv (from this
// process: the kernel's copy is the same), beside BenchmarkMemmove2MiB:
// the single copy's own speed, below any engine.
func BenchmarkCMARead2MiB(b *testing.B) {
	src, dst := make([]byte, 2<<20), make([]byte, 2<<20)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		if err := readFrom(os.Getpid(), dst, addrOf(src)); err != nil {
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
		if err := readFrom(os.Getpid(), dst, addrOf(src)); err != nil {
			b.Fatal(err)
		}
	}
}

// spreadBufs returns a 2 MiB source and n destinations of 2 MiB from
// Alloc, every page touched: what a stream's receiver writes in turn (the
// bench's sink keeps 32 receives of 2 MiB posted), far more than the CPU's
// caches keep.
func spreadBufs(n int) ([]byte, [][]byte) {
	src := Alloc(2 << 20)
	for i := range src {
		src[i] = byte(i)
	}
	dst := make([][]byte, n)
	for i := range dst {
		dst[i] = Alloc(2 << 20)
		copy(dst[i], src)
	}
	return src, dst
}

// BenchmarkCMARead2MiBSpread reads 2 MiB into 32 buffers in turn with one
// process_vm_readv, BenchmarkCMARead2MiBShared the same with the read
// shared by two threads (readShared), and BenchmarkMemmove2MiBSpread
// copies into the same buffers with memmove: a stream's copy alone.
func BenchmarkCMARead2MiBSpread(b *testing.B) {
	benchSpread(b, func(dst, src []byte) error {
		return readFrom(os.Getpid(), dst, addrOf(src))
	})
}

func BenchmarkCMARead2MiBShared(b *testing.B) {
	helped := 0
	benchSpread(b, func(dst, src []byte) error {
		n, err := readShared(os.Getpid(), dst, addrOf(src))
		helped += n
		return err
	})
	b.ReportMetric(float64(helped)/float64(b.N*(2<<20)/splitChunk), "helped/chunk")
}

func BenchmarkMemmove2MiBSpread(b *testing.B) {
	benchSpread(b, func(dst, src []byte) error {
		copy(dst, src)
		return nil
	})
}

func benchSpread(b *testing.B, read func(dst, src []byte) error) {
	src, dst := spreadBufs(32)
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := read(dst[i%len(dst)], src); err != nil {
			b.Fatal(err)
		}
	}
}
