package engine

import (
	"context"
	"testing"

	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/internal/wire"
)

// BenchmarkTableMatch: a message arrives for a posted exact receive, with
// other threads' receives and a wildcard receive of another thread posted.
func BenchmarkTableMatch(b *testing.B) {
	tab, pool := newTestTable(4096)
	for th := ThreadID(0); th < 1000; th++ {
		post(tab, &Request{dstThread: th + 10, srcProc: 1, srcThread: 1, tag: 1})
	}
	post(tab, &Request{dstThread: 5000, srcProc: AnyProc, srcThread: AnyThread, tag: AnyTag})
	k := key{1, 2, 3, 4}
	r := &Request{dstThread: 3, srcProc: 1, srcThread: 2, tag: 4}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		post(tab, r)
		if arrive(tab, pool, k, 0) != r {
			b.Fatal("no match")
		}
	}
}

// BenchmarkTableUnexpected: a message arrives unexpected, then a receive
// takes it.
func BenchmarkTableUnexpected(b *testing.B) {
	tab, pool := newTestTable(4096)
	k := key{1, 2, 3, 4}
	r := &Request{dstThread: 3, srcProc: 1, srcThread: 2, tag: 4}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		arrive(tab, pool, k, 0)
		m := post(tab, r)
		if m == nil {
			b.Fatal("no message")
		}
		pool.put(m)
	}
}

// BenchmarkReassembly places the fragments of a 1 MiB message in order.
func BenchmarkReassembly1MiB(b *testing.B) {
	const frag = wire.MaxFragment - wire.HeaderSize
	const total = 1 << 20
	body := make([]byte, frag)
	var bp bufPool
	m := &mcb{}
	n := uint32((total + frag - 1) / frag)
	b.SetBytes(total)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m.start(total, frag, n, &bp)
		for j := uint32(0); j < n; j++ {
			l := wire.FragLen(total, frag, j)
			m.place(j, body[:l])
		}
		m.clear()
	}
}

// BenchmarkSendPath64 sends 64-byte messages between two engines over the
// in-memory fabric, receives posted ahead, so the cost is the engine's.
func BenchmarkSendPath64(b *testing.B) {
	e0, e1 := memPair(b, Config{})
	ctx := context.Background()
	data := make([]byte, 64)
	buf := make([]byte, 64)
	r := newRequest(e1, recvReq)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.rearmRecv(0, 0, 0, 1, buf)
		e1.post(r)
		s := e0.newSend(0, 1, 0, 1, data)
		e0.post(s)
		if err := r.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLocalPath64 is the same between two threads of one engine.
func BenchmarkLocalPath64(b *testing.B) {
	n := mem.NewNetwork()
	p, _ := n.Listen("x")
	e, _ := New(Config{Proc: 0, JobKey: 1})
	e.AddPort(p, Blocking)
	defer e.Close()
	ctx := context.Background()
	data := make([]byte, 64)
	buf := make([]byte, 64)
	r := newRequest(e, recvReq)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.rearmRecv(0, 0, 1, 1, buf)
		e.post(r)
		s := e.newSend(1, 0, 0, 1, data)
		e.post(s)
		if err := r.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkThousandWaiters: 1,000 threads each wait for one message at a
// time from their own sender in another process (over UDP), as the
// contention benchmark's receivers do; an op is one message.
func BenchmarkThousandWaiters(b *testing.B) {
	const n = 1000
	es := udpEngines(b, 2, Blocking)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := make([]chan int, n)
	done := make(chan error, n)
	for i := range start {
		start[i] = make(chan int, 1)
		go func() {
			ep := es[1].Endpoint(ThreadID(100 + i))
			buf := make([]byte, 64)
			for k := range start[i] {
				var err error
				for range k {
					if _, err = ep.Recv(ctx, 0, ThreadID(i), 3, buf); err != nil {
						break
					}
				}
				done <- err
			}
		}()
	}
	defer func() {
		for _, s := range start {
			close(s)
		}
	}()
	msg := make([]byte, 64)
	round := func(k int) {
		for _, s := range start {
			s <- k
		}
		for j := 0; j < k; j++ {
			for i := range n {
				if err := es[0].Post(ThreadID(i), 1, ThreadID(100+i), 3, msg); err != nil {
					b.Fatal(err)
				}
			}
		}
		for range n {
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	}
	round(5)
	b.ResetTimer()
	per := max(1, b.N/n)
	round(per)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(per*n), "ns/msg")
}
