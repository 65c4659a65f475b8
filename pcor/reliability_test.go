package pcor_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/faulty"
	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/fabric/udp"
	"github.com/pcor-go/pcor/pcor"
)

var hostile = faulty.Faults{Loss: 0.10, Duplicate: 0.05, Reorder: 0.05, Corrupt: 0.02}

// mixedSize gives message i of pair p a size from a mix that is mostly
// small, sometimes several fragments.
func mixedSize(p, i int) int {
	switch x := (p*7919 + i*104729) % 100; {
	case x < 3:
		return 100000 + x*20000
	case x < 15:
		return 5000 + x*1000
	case x < 17:
		return 0
	default:
		return 8 + x*13
	}
}

func payload(p, i int) []byte {
	b := randomBytes(mixedSize(p, i), uint64(p)<<32|uint64(i))
	if len(b) >= 8 {
		binary.LittleEndian.PutUint32(b, uint32(p))
		binary.LittleEndian.PutUint32(b[4:], uint32(i))
	}
	return b
}

// exchange sends per messages from thread p of a to thread p of b for
// each of pairs pairs, all at once, and checks every message arrives
// once, intact and in order.
func exchange(t *testing.T, a, b *pcor.Node, pairs, per int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2*pairs)
	for p := 0; p < pairs; p++ {
		wg.Add(2)
		go func(p int) {
			defer wg.Done()
			th := a.Thread(pcor.ThreadID(p))
			dst := pcor.Addr{Proc: b.Proc(), Thread: pcor.ThreadID(p)}
			var reqs []*pcor.Request
			for i := 0; i < per; i++ {
				reqs = append(reqs, th.Isend(dst, pcor.Tag(p%3), payload(p, i)))
				if len(reqs) == 64 {
					for _, r := range reqs {
						if err := r.Wait(ctx); err != nil {
							errs <- fmt.Errorf("pair %d send: %w", p, err)
							return
						}
					}
					reqs = reqs[:0]
				}
			}
			for _, r := range reqs {
				if err := r.Wait(ctx); err != nil {
					errs <- fmt.Errorf("pair %d send: %w", p, err)
					return
				}
			}
		}(p)
		go func(p int) {
			defer wg.Done()
			th := b.Thread(pcor.ThreadID(p))
			src := pcor.Addr{Proc: a.Proc(), Thread: pcor.ThreadID(p)}
			for i := 0; i < per; i++ {
				m, err := th.Recv(ctx, src, pcor.Tag(p%3))
				if err != nil {
					errs <- fmt.Errorf("pair %d recv %d: %w", p, i, err)
					return
				}
				if string(m.Data) != string(payload(p, i)) {
					errs <- fmt.Errorf("pair %d: message %d wrong, out of order or corrupt (len %d)", p, i, len(m.Data))
					return
				}
			}
		}(p)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Nothing more may arrive: every message came exactly once.
	for p := 0; p < pairs; p++ {
		if st, ok := b.Thread(pcor.ThreadID(p)).Iprobe(pcor.Any, pcor.AnyTag); ok {
			t.Fatalf("extra message after the exchange: %+v", st)
		}
	}
}

func faultyNodes(t *testing.T, pa, pb fabric.Port, seed uint64) (*pcor.Node, *pcor.Node, *faulty.Port, *faulty.Port) {
	t.Helper()
	fa := hostile
	fa.Seed = seed
	fb := hostile
	fb.Seed = seed + 1
	wa, wb := faulty.Wrap(pa, fa), faulty.Wrap(pb, fb)
	a, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Port: wa}},
		Peers: []pcor.Peer{{Proc: 1, Fabric: pb.Kind(), Addr: pb.LocalEndpoint().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey, Listen: []pcor.Listen{{Port: wb}},
		Peers: []pcor.Peer{{Proc: 0, Fabric: pa.Kind(), Addr: pa.LocalEndpoint().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b, wa, wb
}

func TestHostileMem(t *testing.T) {
	n := mem.NewNetwork()
	pa, _ := n.Listen("a")
	pb, _ := n.Listen("b")
	a, b, wa, _ := faultyNodes(t, pa, pb, 42)
	exchange(t, a, b, 4, 2500)
	st := b.Stats()[0]
	t.Logf("faults %+v; receiver: %d duplicates, drops %v; sender retransmits %d", wa.Stats(), st.Duplicates, st.Drops, a.Stats()[0].Retransmits)
	if st.Drops["checksum"] == 0 || st.Duplicates == 0 || a.Stats()[0].Retransmits == 0 {
		t.Fatal("the faults did not happen")
	}
}

func TestHostileUDP(t *testing.T) {
	pa, err := udp.Listen("127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := udp.Listen("127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, b, _, _ := faultyNodes(t, pa, pb, 7)
	exchange(t, a, b, 4, 2500)
	st := b.Stats()[0]
	t.Logf("receiver: %d duplicates, drops %v; sender retransmits %d", st.Duplicates, st.Drops, a.Stats()[0].Retransmits)
}
