package pb

import (
	"context"
	"testing"
	"time"

	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/pcor"
)

// run exercises every measurement against a host; shared says whether the
// far side uses the near node.
func run(t *testing.T, shared bool, mode pcor.Mode) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	node, err := NewNode(NearProc, "udp", mode, 42)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	var sh *pcor.Node
	if shared {
		sh = node
	}
	host := peer.NewLocal(Handlers(sh))
	defer host.Close()
	job := func(kind string, size int) peer.Job {
		j := peer.Job{Kind: kind, Fabric: "udp", Mode: mode.String(), JobKey: 42, Size: size, Window: 8}
		if !shared {
			j.Addr = node.Endpoints()[0].Addr
		}
		return j
	}
	const max = 200000
	n := NewNear(node, max)

	if err := n.Connect(ctx, host, job("pcor-echo", max)); err != nil {
		t.Fatal(err)
	}
	wantProc := FarProc
	if shared {
		wantProc = NearProc
	}
	if shared && n.Far.Proc != wantProc || !shared && n.Far.Proc < wantProc {
		t.Errorf("far process %d, want %d", n.Far.Proc, wantProc)
	}
	for _, size := range []int{1, 4096, max} {
		us, err := n.RoundTrip(ctx, size, 1, 5)
		if err != nil {
			t.Fatalf("round trip %d: %v", size, err)
		}
		if len(us) != 5 || us[0] <= 0 {
			t.Fatalf("round trip %d: %v", size, us)
		}
	}
	if _, err := n.RoundTrip(ctx, max+1, 0, 1); err == nil {
		t.Error("round trip beyond the buffers accepted")
	}
	if err := n.Disconnect(ctx, host); err != nil {
		t.Fatal(err)
	}

	if err := n.Connect(ctx, host, job("pcor-sink", max)); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{64, max} {
		s, err := n.Stream(ctx, size, 8, 10*time.Millisecond)
		if err != nil {
			t.Fatalf("stream %d: %v", size, err)
		}
		if s.Messages < 2 || s.Bytes != s.Messages*int64(size) || s.MBps() <= 0 {
			t.Fatalf("stream %d: %+v", size, s)
		}
	}
	if err := n.Disconnect(ctx, host); err != nil {
		t.Fatal(err)
	}

	defer n.Close()
	var kept *crew
	for i, threads := range []int{1, 50, 50} {
		j := job("pcor-send", 64)
		j.Threads = threads
		if err := n.Connect(ctx, host, j); err != nil {
			t.Fatal(err)
		}
		s, err := n.Contention(ctx, host, threads, 7, 64)
		if err != nil {
			t.Fatalf("contention %d: %v", threads, err)
		}
		if s.Messages != int64(threads*7) || s.Rate() <= 0 {
			t.Fatalf("contention %d: %+v", threads, s)
		}
		// The receivers of a thread count serve its later samples, each
		// with a far job of its own (a process of its own when not
		// shared), as an application's threads live on.
		if i == 1 {
			kept = n.crews[threads]
		} else if i == 2 && n.crews[threads] != kept {
			t.Errorf("contention %d: a new crew of receivers for the second sample", threads)
		}
		if err := n.Disconnect(ctx, host); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSameNode(t *testing.T)        { run(t, true, pcor.Blocking) }
func TestTwoNodes(t *testing.T)        { run(t, false, pcor.Blocking) }
func TestTwoNodesPolling(t *testing.T) { run(t, false, pcor.Polling) }

func TestParse(t *testing.T) {
	if m, err := ParseMode("Polling"); err != nil || m != pcor.Polling {
		t.Errorf("ParseMode(Polling) = %v, %v", m, err)
	}
	if _, err := ParseMode("spin"); err == nil {
		t.Error("ParseMode accepted spin")
	}
	p, ep, err := ParseAddr(FormatAddr(7, "127.0.0.1:9"))
	if err != nil || p != 7 || ep != "127.0.0.1:9" {
		t.Errorf("ParseAddr = %v %q %v", p, ep, err)
	}
	if _, _, err := ParseAddr("x@y"); err == nil {
		t.Error("ParseAddr accepted x@y")
	}
}
