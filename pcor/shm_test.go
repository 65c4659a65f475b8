package pcor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/shm"
	"github.com/pcor-go/pcor/pcor"
)

// shmNode opens process 0 on a shared-memory port and starts the echo
// peer process beside it.
func shmNode(t testing.TB, cfg pcor.Config) (*pcor.Node, *pcor.Thread, func() error) {
	t.Helper()
	return shmNodeIn(t, cfg, nil)
}

// shmNodeIn is shmNode with the echo peer started behind the command
// prefix (e.g. unshare --user).
func shmNodeIn(t testing.TB, cfg pcor.Config, prefix []string) (*pcor.Node, *pcor.Thread, func() error) {
	t.Helper()
	cfg.Proc, cfg.JobKey = 0, jobKey
	cfg.Listen = []pcor.Listen{{Fabric: "shm"}}
	n, err := pcor.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	cmd, out := spawn(t, prefix, "shm-echo", "PCOR_TEST_PEER="+n.Endpoints()[0].Addr)
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		t.Fatalf("peer did not start: %q %v", line, err)
	}
	if err := n.AddPeer(pcor.Peer{Proc: 1, Fabric: "shm", Addr: strings.TrimSpace(line[5:])}); err != nil {
		t.Fatal(err)
	}
	return n, n.NewThread(), func() error {
		cmd.Process.Kill()
		return cmd.Wait()
	}
}

// TestOverShm sends messages of 0 B to 64 MiB between two processes
// through pcor nodes on shared-memory ports and checks the echoes byte for
// byte; no datagram may be dropped on the way.
func TestOverShm(t *testing.T) {
	n, th, _ := shmNode(t, pcor.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	peer := pcor.Addr{Proc: 1, Thread: 0}
	for i, size := range []int{0, 1, 65535, 65536, 65537, 2095873, 64 << 20} {
		data := randomBytes(size, uint64(size))
		if err := th.Send(ctx, peer, pcor.Tag(i+1), data); err != nil {
			t.Fatalf("send %d: %v", size, err)
		}
		m, err := th.Recv(ctx, peer, pcor.Tag(i+1))
		if err != nil {
			t.Fatalf("recv %d: %v", size, err)
		}
		if !bytes.Equal(m.Data, data) {
			t.Fatalf("%d bytes came back different", size)
		}
	}
	st := n.Stats()[0]
	if st.DroppedTotal != 0 {
		t.Errorf("a shared-memory link dropped %d datagrams", st.DroppedTotal)
	}
	// Shared memory is reliable: the engine acknowledges and retransmits
	// nothing over it.
	if st.AcksSent != 0 || st.AcksRecv != 0 || st.Retransmits != 0 {
		t.Errorf("over shared memory: %d acknowledgements sent, %d received, %d retransmissions",
			st.AcksSent, st.AcksRecv, st.Retransmits)
	}
	t.Logf("%d fragments sent", st.FragsSent)
}

// TestShmPeerKilledMidMessage kills the echo process while a 64 MiB
// message streams to it: the send fails with an error within seconds, and
// nothing hangs.
func TestShmPeerKilledMidMessage(t *testing.T) {
	_, th, kill := shmNode(t, pcor.Config{UnreachableTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := th.Isend(pcor.Addr{Proc: 1, Thread: 0}, 1, make([]byte, 64<<20))
	time.Sleep(20 * time.Millisecond)
	kill()
	start := time.Now()
	err := req.Wait(ctx)
	if !errors.Is(err, pcor.ErrUnreachable) && !errors.Is(err, pcor.ErrPeerDown) {
		t.Fatalf("send to a killed peer: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the failure took %v", d)
	}
}

// shmRawEchoPeer opens a bare shared-memory port (no pcor node) and sends
// every datagram back to PCOR_TEST_PEER until an empty one arrives: the
// fabric's own round trip, the floor under pcor's.
func shmRawEchoPeer() int {
	p, err := shm.Listen("", shm.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer p.Close()
	to, err := p.ParseEndpoint(os.Getenv("PCOR_TEST_PEER"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ADDR %s\n", p.LocalEndpoint())
	msgs := make([][]byte, p.BatchSize())
	dgs := make([]fabric.Datagram, p.BatchSize())
	last := time.Now()
	for {
		// Poll for 50 µs after the last datagram, then sleep, as a pcor
		// thread waiting for its message does.
		n, err := p.Poll(msgs)
		if n == 0 && err == nil {
			if time.Since(last) < 50*time.Microsecond {
				continue
			}
			n, err = p.Receive(msgs)
		}
		last = time.Now()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for i, m := range msgs[:n] {
			if len(m) == 0 {
				return 0
			}
			dgs[i] = fabric.Datagram{Body: m, To: to}
		}
		if _, err := p.Send(dgs[:n]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

// rawShm is the near side of the bare-fabric round trip.
type rawShm struct {
	p    *shm.Port
	to   fabric.Endpoint
	msgs [][]byte
	dgs  []fabric.Datagram
}

func startRawShm(b *testing.B) *rawShm {
	p, err := shm.Listen("", shm.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	_, out := spawn(b, nil, "shm-raw-echo", "PCOR_TEST_PEER="+p.LocalEndpoint().String())
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		b.Fatalf("raw shm peer did not start: %q %v", line, err)
	}
	to, err := p.ParseEndpoint(strings.TrimSpace(line[5:]))
	if err != nil {
		b.Fatal(err)
	}
	return &rawShm{p: p, to: to, msgs: make([][]byte, p.BatchSize())}
}

// roundTrip sends data in datagrams of at most 64 KiB and waits for all of
// them to come back, polling for 50 µs and then sleeping, as a pcor thread
// waiting for its message does.
func (r *rawShm) roundTrip(b *testing.B, data []byte) {
	const frag = 65000
	r.dgs = r.dgs[:0]
	for off := 0; off < len(data) || off == 0; off += frag {
		r.dgs = append(r.dgs, fabric.Datagram{Body: data[off:min(off+frag, len(data))], To: r.to})
		if len(data) == 0 {
			break
		}
	}
	// Send in groups, taking echoes in between, so that neither ring
	// fills while both sides send.
	got := 0
	for i := 0; i < len(r.dgs); i += 8 {
		if _, err := r.p.Send(r.dgs[i:min(i+8, len(r.dgs))]); err != nil {
			b.Fatal(err)
		}
		n, err := r.p.Poll(r.msgs)
		if err != nil {
			b.Fatal(err)
		}
		got += n
	}
	spinUntil := time.Now().Add(50 * time.Microsecond)
	for got < len(r.dgs) {
		var n int
		var err error
		if time.Now().Before(spinUntil) {
			n, err = r.p.Poll(r.msgs)
		} else {
			n, err = r.p.Receive(r.msgs)
		}
		if err != nil {
			b.Fatal(err)
		}
		got += n
	}
}

// BenchmarkShmVersusUDP compares pcor over shared memory with pcor over UDP
// on loopback and with the bare shared-memory fabric, between two
// processes, sampling the three in turn so that the machine's load weighs
// on all alike: a 1-byte round trip and a 2 MiB round trip, reported as
// medians of the samples' medians, their spread ((max-min)/median) and the
// ratios of medians; at
// 2 MiB also the one-way rate of pcor over shm against a memmove of the
// same size, sampled in turn too.
func BenchmarkShmVersusUDP(b *testing.B) {
	udpNode, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey})
	if err != nil {
		b.Fatal(err)
	}
	defer udpNode.Close()
	cmd, out := spawn(b, nil, "echo", "PCOR_TEST_PEER="+udpNode.Endpoints()[0].Addr)
	defer cmd.Process.Kill()
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		b.Fatalf("udp peer did not start: %q %v", line, err)
	}
	if err := udpNode.AddPeer(pcor.Peer{Proc: 1, Addr: strings.TrimSpace(line[5:])}); err != nil {
		b.Fatal(err)
	}
	_, shmThread, _ := shmNode(b, pcor.Config{})
	raw := startRawShm(b)
	udpThread := udpNode.NewThread()
	ctx := context.Background()
	peer := pcor.Addr{Proc: 1, Thread: 0}
	// Each sample is the median of its round trips: a load that takes
	// the CPU away now and then shows in the spread, not in the figure.
	rts := make([]float64, 0, 200)
	roundTrips := func(th *pcor.Thread, data []byte, n int) float64 {
		buf := make([]byte, len(data))
		rts = rts[:0]
		for i := 0; i < n; i++ {
			start := time.Now()
			if err := th.Send(ctx, peer, 1, data); err != nil {
				b.Fatal(err)
			}
			if _, err := th.RecvInto(ctx, peer, 1, buf); err != nil {
				b.Fatal(err)
			}
			rts = append(rts, float64(time.Since(start)))
		}
		m, _ := medianSpread(rts)
		return m
	}
	rawTrips := func(data []byte, n int) float64 {
		rts = rts[:0]
		for i := 0; i < n; i++ {
			start := time.Now()
			raw.roundTrip(b, data)
			rts = append(rts, float64(time.Since(start)))
		}
		m, _ := medianSpread(rts)
		return m
	}
	for _, size := range []int{1, 2 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			data := randomBytes(size, 1)
			dst := make([]byte, size)
			n := 200
			if size > 1<<16 {
				n = 10
			}
			roundTrips(udpThread, data, n/10+1) // warm up
			roundTrips(shmThread, data, n/10+1)
			rawTrips(data, n/10+1)
			var u, s, r, mv []float64
			for i := 0; i < b.N; i++ {
				u = append(u, roundTrips(udpThread, data, n))
				s = append(s, roundTrips(shmThread, data, n))
				r = append(r, rawTrips(data, n))
				start := time.Now()
				for k := 0; k < n; k++ {
					copy(dst, data)
				}
				mv = append(mv, float64(time.Since(start))/float64(n))
			}
			mu, su := medianSpread(u)
			ms, ss := medianSpread(s)
			mr, sr := medianSpread(r)
			b.ReportMetric(mu/1e3, "udp-µs/rt")
			b.ReportMetric(su, "udp-spread")
			b.ReportMetric(ms/1e3, "shm-µs/rt")
			b.ReportMetric(ss, "shm-spread")
			b.ReportMetric(mr/1e3, "raw-µs/rt")
			b.ReportMetric(sr, "raw-spread")
			b.ReportMetric(ms/mu, "shm/udp")
			b.ReportMetric(ms/mr, "shm/raw")
			if size > 1<<16 {
				mm, _ := medianSpread(mv)
				// One way: half a round trip carries size bytes.
				b.ReportMetric(float64(size)/(ms/2)*1e3, "shm-MB/s")
				b.ReportMetric(float64(size)/mm*1e3, "memmove-MB/s")
				b.ReportMetric((mm)/(ms/2), "shm/memmove")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
	udpThread.Send(ctx, peer, 0, nil)
}

// medianSpread returns the median of xs and their spread, (max-min)/median.
func medianSpread(xs []float64) (med, spread float64) {
	slices.Sort(xs)
	med = xs[len(xs)/2]
	return med, (xs[len(xs)-1] - xs[0]) / med
}
