package raw

import (
	"context"
	"testing"
	"time"

	"github.com/pcor-go/pcor/bench/internal/peer"
)

func handlers() peer.Handlers {
	return peer.Handlers{"udp-echo": UDPEcho, "udp-sink": UDPSink, "tcp-sink": TCPSink}
}

func TestUDPPingPong(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := OpenUDP()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := peer.NewLocal(handlers())
	defer h.Close()
	for _, size := range []int{1, 1500, 100000} {
		addr, err := h.Start(ctx, peer.Job{Kind: "udp-echo", Addr: p.LocalEndpoint().String(), Size: size})
		if err != nil {
			t.Fatal(err)
		}
		to, err := p.ParseEndpoint(addr)
		if err != nil {
			t.Fatal(err)
		}
		us, err := PingPong(ctx, p, to, size, 2, 10)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if len(us) != 10 {
			t.Fatalf("size %d: %d samples", size, len(us))
		}
		for _, x := range us {
			if x <= 0 {
				t.Fatalf("size %d: non-positive round trip %v", size, x)
			}
		}
		if err := h.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUDPStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := OpenUDP()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := peer.NewLocal(handlers())
	defer h.Close()
	addr, err := h.Start(ctx, peer.Job{Kind: "udp-sink", Addr: p.LocalEndpoint().String()})
	if err != nil {
		t.Fatal(err)
	}
	to, _ := p.ParseEndpoint(addr)
	for seq, size := range []int{64, 70000} {
		s, err := Stream(ctx, p, to, size, 20*time.Millisecond, uint64(seq))
		if err != nil {
			t.Fatal(err)
		}
		if s.Bytes <= 0 || s.Messages <= 0 || s.Elapsed <= 0 {
			t.Fatalf("size %d: empty sample %+v", size, s)
		}
		if s.Elapsed > time.Second {
			t.Errorf("size %d: interval %v longer than the stream", size, s.Elapsed)
		}
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestTCPStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := peer.NewLocal(handlers())
	defer h.Close()
	addr, err := h.Start(ctx, peer.Job{Kind: "tcp-sink", Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	s, err := TCPStream(ctx, addr, 1<<20, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if s.Bytes != s.Messages<<20 || s.Messages < 1 || s.MBps() <= 0 {
		t.Errorf("sample %+v", s)
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := TCPStream(ctx, addr, 10, time.Millisecond); err == nil {
		t.Error("stream to a stopped sink succeeded")
	}
}

func TestChan(t *testing.T) {
	ctx := context.Background()
	us, err := ChanPingPong(ctx, 8, 5, 50)
	if err != nil || len(us) != 50 {
		t.Fatalf("ping-pong: %d samples, %v", len(us), err)
	}
	s, err := ChanStream(ctx, 4096, 16, 10*time.Millisecond)
	if err != nil || s.Messages < 1 || s.Bytes != s.Messages*4096 {
		t.Fatalf("stream: %+v, %v", s, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ChanPingPong(cctx, 1, 0, 10); err == nil {
		t.Error("ping-pong ignored a cancelled context")
	}
}
