package engine

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// A whole message in one datagram that is next in its stream takes the
// short path (wholeLocked); any other arrival order takes the general one.
// Four messages with one key (1 B, 100 KiB in two fragments, 0 B, 3 B into
// a 2 B buffer) arrive in every order of their five datagrams, on the
// reliable and on the datagram path, their receives posted before or
// after: each receive gets its own message whole, in the order sent, the
// stream ends where five datagrams and four messages leave it, and the
// sends are acknowledged.
func TestWholeMessageOrders(t *testing.T) {
	sizes := []int{1, 100 << 10, 0, 3}
	bufs := []int{64, -1, 64, 2} // -1: no buffer, the engine allocates
	const ndg = 5
	dgsBefore := []int{0, 1, 3, 4, 5} // datagrams of the messages before each
	orders := permutations(ndg)
	for _, c := range []struct {
		name string
		caps fabric.Caps
	}{{"reliable", fabric.Reliable | fabric.Protected}, {"datagram", fabric.Protected}} {
		t.Run(c.name, func(t *testing.T) {
			// No retransmission in a round (the datagrams of each are counted).
			e0, e1, pa, pb := legPair(t, c.caps, Blocking, Config{MinRTO: 5 * time.Second, MaxRTO: 10 * time.Second})
			port, back := legOf(pb), legOf(pa)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			round := 0
			for _, order := range orders {
				for _, posted := range []bool{true, false} {
					round++
					msgs := make([][]byte, len(sizes))
					for i, n := range sizes {
						msgs[i] = pattern(n, uint64(round*10+i))
					}
					recvs := make([]*Request, len(sizes))
					post := func() {
						for i := range recvs {
							var buf []byte
							if bufs[i] >= 0 {
								buf = make([]byte, bufs[i])
							}
							recvs[i] = e1.newRecv(4, 0, 3, 9, buf)
							e1.post(recvs[i])
						}
					}
					if posted {
						post()
					}
					port.gate(true)
					// Each message leaves before the next is sent, so that
					// none is bundled with another.
					sends := make([]*Request, len(sizes))
					for i, m := range msgs {
						sends[i] = e0.newSend(3, 1, 4, 9, m)
						e0.post(sends[i])
						waitFor(t, ctx, func() bool { return port.permute(nil) >= dgsBefore[i+1] })
					}
					// (A datagram sent again, if any, keeps its place after them.)
					port.permute(order)
					// The sender sees no acknowledgement until the stream is
					// checked: none can make it send again what a mistake
					// of the receiver's left out.
					back.gate(true)
					port.gate(false)
					if !posted {
						// The messages are stored as they come (the dispatcher
						// handles them); the receives find them.
						waitFor(t, ctx, func() bool { return e1.Stats()[0].MessagesRecv >= uint64(round*len(sizes)) })
						post()
					}
					for i, r := range recvs {
						err := r.Wait(ctx)
						want, wantErr := msgs[i], error(nil)
						if bufs[i] >= 0 && len(want) > bufs[i] {
							want, wantErr = want[:bufs[i]], ErrTruncated
						}
						if err != wantErr || !bytes.Equal(r.Data(), want) {
							t.Fatalf("order %v, posted %v: receive %d: %v, %d bytes, want %v, %d bytes (equal %v)",
								order, posted, i, err, len(r.Data()), wantErr, len(want), bytes.Equal(r.Data(), want))
						}
					}
					checkStream(t, e1, c.caps.Has(fabric.Reliable), round, len(sizes), ndg, fmt.Sprintf("order %v, posted %v", order, posted))
					back.gate(false)
					for i, s := range sends {
						if err := s.Wait(ctx); err != nil {
							t.Fatalf("order %v, posted %v: send %d: %v", order, posted, i, err)
						}
					}
					checkStream(t, e1, c.caps.Has(fabric.Reliable), round, len(sizes), ndg, fmt.Sprintf("order %v, posted %v", order, posted))
				}
			}
		})
	}
}

// checkStream checks e1's receive stream from process 0 after round
// rounds of msgs messages in dgs datagrams each: all accepted, and on the
// datagram path every sequence number below the last arrived.
func checkStream(t *testing.T, e1 *Engine, reliable bool, round, msgs, dgs int, what string) {
	t.Helper()
	p := e1.peer(0)
	p.rxmu.Lock()
	next, cum, maxSeen, inprog, held := p.rx.nextMsg, p.rx.cum, p.rx.maxSeen, len(p.rx.inprog), len(p.rx.held)
	p.rxmu.Unlock()
	wantCum := uint64(0)
	if !reliable {
		wantCum = uint64(round * dgs)
	}
	if next != uint64(round*msgs) || cum != wantCum || maxSeen > cum || inprog != 0 || held != 0 {
		t.Fatalf("%s: stream at message %d, cum %d, max seen %d, %d in progress, %d held; want message %d, cum %d",
			what, next, cum, maxSeen, inprog, held, round*msgs, wantCum)
	}
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test when ctx ends.
func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal(fmt.Errorf("condition not met: %w", ctx.Err()))
		case <-time.After(100 * time.Microsecond):
		}
	}
}
