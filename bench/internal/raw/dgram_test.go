package raw

import (
	"context"
	"testing"
	"time"

	"github.com/pcor-go/pcor/bench/internal/peer"
)

// TestDgramPingPong runs each datagram baseline against its echo, with
// messages of one datagram and of several, and stops the echo between
// sizes (a blocked or spinning echo must end on Stop).
func TestDgramPingPong(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, kind := range []string{KindConn, KindSys, KindSysPoll} {
		h := peer.NewLocal(peer.Handlers{kind + "-echo": DgramEcho(kind)})
		for _, size := range []int{1, 1500, 100000} {
			s, err := OpenDgram(kind)
			if err != nil {
				t.Fatal(err)
			}
			addr, err := h.Start(ctx, peer.Job{Kind: kind + "-echo", Addr: DgramAddr(s), Size: size})
			if err != nil {
				t.Fatal(err)
			}
			us, err := DgramPingPong(ctx, s, addr, size, 2, 10)
			if err != nil {
				t.Fatalf("%s, %d B: %v", kind, size, err)
			}
			if len(us) != 10 {
				t.Fatalf("%s, %d B: %d samples", kind, size, len(us))
			}
			for _, u := range us {
				if u <= 0 {
					t.Fatalf("%s, %d B: round trip %v µs", kind, size, u)
				}
			}
			if err := h.Stop(ctx); err != nil {
				t.Fatalf("%s: stop: %v", kind, err)
			}
		}
	}
	if _, err := OpenDgram("smoke-signals"); err == nil {
		t.Error("unknown kind opened")
	}
}
