package pcor_test

import (
	"context"
	"testing"

	"github.com/pcor-go/pcor/pcor"
)

// BenchmarkRate64ShmPosted streams 64-byte messages one way over shared
// memory in rounds of 64 whose receives are all posted before the round's
// sends, from one goroutine: every message finds its receive, the path of
// a stream whose receiver keeps up. Under a tool that runs one thread at a
// time (callgrind), BenchmarkRate64Shm's sender runs far ahead and every
// message arrives unexpected; this counts the other path.
func BenchmarkRate64ShmPosted(b *testing.B) {
	a, c := shmPair(b)
	src, dst := a.NewThread(), c.NewThread()
	ctx := context.Background()
	msg := a.Alloc(64)
	const depth = 64
	recvs := make([]*pcor.Request, depth)
	sends := make([]*pcor.Request, depth)
	bufs := make([][]byte, depth)
	for i := range bufs {
		bufs[i] = c.Alloc(64)
	}
	b.ReportAllocs()
	for n := 0; n < b.N; n += depth {
		k := min(depth, b.N-n)
		for i := range k {
			if recvs[i] == nil {
				recvs[i] = dst.Irecv(src.Addr(), 1, bufs[i])
			} else {
				recvs[i] = dst.IrecvReuse(recvs[i], src.Addr(), 1, bufs[i])
			}
		}
		for i := range k {
			sends[i] = src.Isend(dst.Addr(), 1, msg)
		}
		for i := range k {
			if err := recvs[i].Wait(ctx); err != nil {
				b.Fatal(err)
			}
			_ = recvs[i].Message()
		}
		for i := range k {
			if err := sends[i].Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}
