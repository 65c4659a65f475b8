package pcor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/udp"
	"github.com/pcor-go/pcor/pcor"
)

func udpPair(b testing.TB, mode pcor.Mode) (*pcor.Node, *pcor.Node) {
	return udpPairSilence(b, mode, 0)
}

// udpPairSilence is udpPair with the nodes' UnreachableTimeout (0: the
// default).
func udpPairSilence(b testing.TB, mode pcor.Mode, silence time.Duration) (*pcor.Node, *pcor.Node) {
	a, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Mode: mode}}, UnreachableTimeout: silence})
	if err != nil {
		b.Fatal(err)
	}
	c, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey, Listen: []pcor.Listen{{Mode: mode}}, UnreachableTimeout: silence,
		Peers: []pcor.Peer{{Proc: 0, Addr: a.Endpoints()[0].Addr}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.AddPeer(pcor.Peer{Proc: 1, Addr: c.Endpoints()[0].Addr}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close(); c.Close() })
	return a, c
}

// BenchmarkStream measures one-way throughput of 2 MiB messages between
// two nodes over UDP on loopback.
func BenchmarkStream2MiB(b *testing.B) {
	a, c := udpPair(b, pcor.Blocking)
	src, dst := a.NewThread(), c.NewThread()
	data := a.Alloc(2 << 20)
	buf := c.Alloc(2 << 20)
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	done := make(chan error, 1)
	go func() {
		for i := 0; i < b.N; i++ {
			if _, err := dst.RecvInto(ctx, src.Addr(), 1, buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < b.N; i++ {
		if err := src.Send(ctx, dst.Addr(), 1, data); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPingPong1B measures the round trip of a 1-byte message between
// two nodes over UDP on loopback.
func BenchmarkPingPong1B(b *testing.B) {
	for _, mode := range []pcor.Mode{pcor.Blocking, pcor.Polling} {
		b.Run(mode.String(), func(b *testing.B) {
			a, c := udpPair(b, mode)
			ta, tc := a.NewThread(), c.NewThread()
			ctx := context.Background()
			msg := []byte{1}
			bufA, bufC := make([]byte, 1), make([]byte, 1)
			go func() {
				for {
					m, err := tc.RecvInto(ctx, ta.Addr(), 1, bufC)
					if err != nil {
						return
					}
					r := tc.Isend(ta.Addr(), 1, m.Data)
					_ = r
				}
			}()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := ta.Isend(tc.Addr(), 1, msg)
				if _, err := ta.RecvInto(ctx, tc.Addr(), 1, bufA); err != nil {
					b.Fatal(err)
				}
				_ = r
			}
		})
	}
}

// BenchmarkPingPongSyscalls reports the system calls per round trip.
func BenchmarkPingPongSyscalls(b *testing.B) {
	a, c := udpPair(b, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	pingPong(context.Background(), b, ta, tc, a.Alloc(1), a.Alloc(1), make([]byte, 1))
	b.StopTimer()
	type stater interface{ Stats() udp.Stats }
	sa := a.Endpoints()[0].Port.(stater).Stats()
	sc := c.Endpoints()[0].Port.(stater).Stats()
	b.ReportMetric(float64(sa.SendCalls+sc.SendCalls)/float64(b.N), "sendmmsg/op")
	b.ReportMetric(float64(sa.RecvCalls+sc.RecvCalls)/float64(b.N), "recvmmsg/op")
}

// BenchmarkRate64 streams 64-byte messages one way with 64 in flight.
func BenchmarkRate64(b *testing.B) {
	a, c := udpPair(b, pcor.Blocking)
	src, dst := a.NewThread(), c.NewThread()
	ctx := context.Background()
	msg := a.Alloc(64)
	done := make(chan error, 1)
	go func() {
		buf := c.Alloc(64)
		for i := 0; i < b.N; i++ {
			if _, err := dst.RecvInto(ctx, src.Addr(), 1, buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	b.ReportAllocs()
	sendWindowed(ctx, b, src, dst, msg)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	type stater interface{ Stats() udp.Stats }
	sa := a.Endpoints()[0].Port.(stater).Stats()
	b.ReportMetric(float64(sa.SentDatagrams)/float64(sa.SendCalls), "dgrams/sendcall")
}

// BenchmarkSameNodePingPong measures the round trip of a 1-byte message
// between two threads of one node, beside the same ping-pong over Go
// channels whose ends copy the payload (the baseline of bench roundtrip
// --placement same).
func BenchmarkSameNodePingPong(b *testing.B) {
	b.Run("chan", func(b *testing.B) {
		ping, pong := make(chan []byte), make(chan []byte)
		go func() {
			own := make([]byte, 1)
			for m := range ping {
				copy(own, m)
				pong <- own
			}
		}()
		defer close(ping)
		msg, in := []byte{1}, make([]byte, 1)
		for i := 0; i < b.N; i++ {
			ping <- msg
			copy(in, <-pong)
		}
	})
	for _, mode := range []pcor.Mode{pcor.Blocking, pcor.Polling} {
		b.Run(mode.String(), func(b *testing.B) {
			n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Mode: mode}}})
			if err != nil {
				b.Fatal(err)
			}
			defer n.Close()
			ta, tc := n.NewThread(), n.NewThread()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pingPong(ctx, b, ta, tc, []byte{1}, make([]byte, 1), make([]byte, 1))
		})
	}
}

// pingPong times b.N round trips of msg from ta to tc, received into bufA;
// tc sends each message back from bufC until ctx ends or a call fails.
func pingPong(ctx context.Context, b *testing.B, ta, tc *pcor.Thread, msg, bufA, bufC []byte) {
	go func() {
		for {
			m, err := tc.RecvInto(ctx, ta.Addr(), 1, bufC)
			if err != nil {
				return
			}
			if err := tc.Send(ctx, ta.Addr(), 1, m.Data); err != nil {
				return
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ta.Send(ctx, tc.Addr(), 1, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := ta.RecvInto(ctx, tc.Addr(), 1, bufA); err != nil {
			b.Fatal(err)
		}
	}
}

// shmPair opens two nodes of this process on shared-memory ports.
func shmPair(b testing.TB) (*pcor.Node, *pcor.Node) { return shmPairMode(b, pcor.Blocking) }

// BenchmarkRate64Shm streams 64-byte messages one way over shared memory
// with 64 in flight, between two nodes of this process; the receiver keeps
// 64 receives posted and posts each again once it completed (IrecvReuse),
// as the bench's stream sink does. Counting instructions
// (GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind) gives the work per
// message of both sides.
func BenchmarkRate64Shm(b *testing.B) {
	a, c := shmPair(b)
	src, dst := a.NewThread(), c.NewThread()
	ctx := context.Background()
	msg := a.Alloc(64)
	done := make(chan error, 1)
	const depth = 64
	go func() {
		ring := make([]*pcor.Request, depth)
		bufs := make([][]byte, depth)
		for i := range ring {
			bufs[i] = c.Alloc(64)
			ring[i] = dst.Irecv(src.Addr(), 1, bufs[i])
		}
		for n := 0; n < b.N; n++ {
			i := n % depth
			if err := ring[i].Wait(ctx); err != nil {
				done <- err
				return
			}
			_ = ring[i].Message()
			ring[i] = dst.IrecvReuse(ring[i], src.Addr(), 1, bufs[i])
		}
		for _, r := range ring {
			r.Cancel()
		}
		done <- nil
	}()
	b.ReportAllocs()
	sendWindowed(ctx, b, src, dst, msg)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// sendWindowed sends msg b.N times from src to dst with Isend, at most 64
// sends outstanding, and waits for the last of them. The window is a ring,
// so that the loop allocates nothing of its own (B/op is the engine's).
func sendWindowed(ctx context.Context, b *testing.B, src, dst *pcor.Thread, msg []byte) {
	var window [64]*pcor.Request
	for i := 0; i < b.N; i++ {
		k := i % len(window)
		if r := window[k]; r != nil {
			if err := r.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
		window[k] = src.Isend(dst.Addr(), 1, msg)
	}
	for _, r := range window {
		if r != nil {
			r.Wait(ctx)
		}
	}
}

// BenchmarkContention streams 64-byte messages between n pairs of threads
// of two nodes over UDP at once, each sender posting its share with Isend
// and each receiver taking its share with RecvInto, as bench contention
// does (b.N messages over all pairs). The threads are started, and a first
// round of as many messages is run, before the timer: the timed round
// finds the pools and the threads' stacks as a steady stream would.
func BenchmarkContention(b *testing.B) {
	for _, n := range []int{1, 10, 1000} {
		b.Run(fmt.Sprintf("threads=%d", n), func(b *testing.B) {
			// No unreachable verdict while a slow tool (callgrind) runs it.
			a, c := udpPairSilence(b, pcor.Blocking, 10*time.Minute)
			ctx := context.Background()
			msg := a.Alloc(64)
			per := max(1, b.N/n)
			errs := make(chan error, 2*n)
			// a round for each receiver (2i) and each sender (2i+1)
			rounds := make([]chan struct{}, 2*n)
			for i := range rounds {
				rounds[i] = make(chan struct{}, 1)
			}
			for i := range n {
				src, dst := a.NewThread(), c.NewThread()
				go func() {
					buf := c.Alloc(64)
					for range rounds[2*i] {
						var err error
						for range per {
							if _, err = dst.RecvInto(ctx, src.Addr(), 1, buf); err != nil {
								break
							}
						}
						errs <- err
					}
				}()
				go func() {
					for range rounds[2*i+1] {
						var err error
						for range per {
							if err = src.Isend(dst.Addr(), 1, msg).Wait(ctx); err != nil {
								break
							}
						}
						errs <- err
					}
				}()
			}
			defer func() {
				for _, r := range rounds {
					close(r)
				}
			}()
			round := func() {
				for _, r := range rounds {
					r <- struct{}{}
				}
				for range 2 * n {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
			}
			round()
			b.ReportAllocs()
			b.ResetTimer()
			round()
			b.StopTimer()
			b.ReportMetric(float64(n*per)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
