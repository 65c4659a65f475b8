package pcor_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// TestTwoNodesOneProcessor: two nodes of one process in a blocking
// ping-pong over UDP with a single processor (GOMAXPROCS=1) complete every
// round trip. The thread waiting on one node drives its port, polling; the
// thread that is to answer, on the other node, needs the very processor
// the driver spins on, so the driver gives up the processor at each empty
// poll while the process has as many drivers as processors. How often the
// drivers still end a leg asleep in the fabric depends on the machine's
// load (a loaded host takes the CPU from a spinning thread for whole time
// slices), so it is a figure of BenchmarkInprocPingPong (sleeps/op: about
// one a round trip on each node when the driver keeps the processor for
// its whole spin, near none once it gives it up), not a condition here.
func TestTwoNodesOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	a, c := udpPair(t, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const warm, rounds = 50, 400
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1)
		for range warm + rounds {
			m, err := tc.RecvInto(ctx, ta.Addr(), 1, buf)
			if err != nil {
				done <- err
				return
			}
			if err := tc.Send(ctx, ta.Addr(), 1, m.Data); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	sleeps := func() (n uint64) {
		for _, nd := range []*pcor.Node{a, c} {
			for _, s := range nd.Stats() {
				n += s.DriverSleeps
			}
		}
		return n
	}
	msg, buf := a.Alloc(1), a.Alloc(1)
	var before uint64
	for i := range warm + rounds {
		if i == warm {
			before = sleeps()
		}
		if err := ta.Send(ctx, tc.Addr(), 1, msg); err != nil {
			t.Fatalf("round %d: send: %v", i, err)
		}
		if _, err := ta.RecvInto(ctx, tc.Addr(), 1, buf); err != nil {
			t.Fatalf("round %d: receive: %v", i, err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the answering thread did not end")
	}
	t.Logf("%d driver sleeps in %d round trips", sleeps()-before, rounds)
}

// BenchmarkInprocPingPong measures a blocking Send/RecvInto round trip of
// 1 byte between two nodes of one process, each thread waiting on its own
// node, at GOMAXPROCS=1 and at the default, and reports the driver sleeps
// per round trip.
func BenchmarkInprocPingPong(b *testing.B) {
	for _, fab := range []string{"udp", "shm"} {
		for _, mode := range []pcor.Mode{pcor.Blocking, pcor.Polling} {
			for _, procs := range []int{1, 0} {
				name := fab + "/" + mode.String() + "/procs=default"
				if procs == 1 {
					name = fab + "/" + mode.String() + "/procs=1"
				}
				b.Run(name, func(b *testing.B) {
					if procs > 0 {
						defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					}
					var a, c *pcor.Node
					if fab == "udp" {
						a, c = udpPair(b, mode)
					} else {
						a, c = shmPairMode(b, mode)
					}
					ta, tc := a.NewThread(), c.NewThread()
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					defer cancel()
					pingPong(ctx, b, ta, tc, a.Alloc(1), a.Alloc(1), make([]byte, 1))
					b.StopTimer()
					var sl uint64
					for _, n := range []*pcor.Node{a, c} {
						for _, s := range n.Stats() {
							sl += s.DriverSleeps
						}
					}
					b.ReportMetric(float64(sl)/float64(b.N), "sleeps/op")
				})
			}
		}
	}
}

func shmPairMode(b testing.TB, mode pcor.Mode) (*pcor.Node, *pcor.Node) {
	a, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Fabric: "shm", Mode: mode}}})
	if err != nil {
		b.Fatal(err)
	}
	c, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey, Listen: []pcor.Listen{{Fabric: "shm", Mode: mode}},
		Peers: []pcor.Peer{{Proc: 0, Fabric: "shm", Addr: a.Endpoints()[0].Addr}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.AddPeer(pcor.Peer{Proc: 1, Fabric: "shm", Addr: c.Endpoints()[0].Addr}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close(); c.Close() })
	return a, c
}
