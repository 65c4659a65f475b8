package engine

import (
	"context"
	"testing"
	"time"
)

// A stream of large messages over UDP keeps no more fragments in flight
// than the peer's socket buffer holds: congestion avoidance, which grows
// the window until a loss, does not take it past the room, so the stream
// never overflows the receiver's buffer (on loopback the only loss there
// is). Many messages go, posted 16 ahead, long enough for an unbounded
// window to grow past the buffer.
func TestLargeStreamStaysInSocketRoom(t *testing.T) {
	a, b := udpPort(t), udpPort(t)
	e0, e1 := pair(t, a, b, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		size  = 2 << 20
		ahead = 16
	)
	n := 600
	if testing.Short() {
		n = 100
	}
	deadline := time.Now().Add(time.Minute)
	done := make(chan error, 1)
	go func() {
		ep := e1.Endpoint(0)
		bufs := make([][]byte, ahead)
		rs := make([]*Request, ahead)
		for i := range bufs {
			bufs[i] = make([]byte, size)
		}
		for i := 0; i < n+ahead; i++ {
			k := i % ahead
			if rs[k] != nil {
				if err := rs[k].Wait(ctx); err != nil {
					done <- err
					return
				}
			}
			if i < n {
				rs[k] = ep.Irecv(0, 0, 7, bufs[k])
			}
		}
		done <- nil
	}()
	data := make([]byte, size)
	ep := e0.Endpoint(0)
	ss := make([]*Request, ahead)
	sent := 0
	for i := 0; i < n+ahead; i++ {
		k := i % ahead
		if ss[k] != nil {
			if err := ss[k].Wait(ctx); err != nil {
				t.Fatal(err)
			}
			ss[k] = nil
		}
		if i < n && time.Now().Before(deadline) {
			ss[k] = ep.Isend(1, 0, 7, data)
			sent++
		}
	}
	// Messages not sent for the deadline are not received either: the
	// receiver's surplus receives are left posted.
	if sent == n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if ov := b.Stats().RecvOverflows; ov != 0 {
		t.Errorf("%d of %d messages sent: the receiver's socket buffer overflowed %d times", sent, n, ov)
	}
	p := (*e0.peers.Load())[1]
	p.mu.Lock()
	cwnd, room := p.tx.cwnd, p.tx.roomCap
	p.mu.Unlock()
	if room <= 0 || cwnd > float64(room) {
		t.Errorf("window %.1f fragments, room %d", cwnd, room)
	}
	t.Logf("%d messages; window %.1f fragments, room %d", sent, cwnd, room)
}
