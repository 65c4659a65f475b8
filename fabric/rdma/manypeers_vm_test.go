package rdma

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// TestPortManyPeers: one port with the default configuration serves more
// peers than its receive buffers could give a window each (12 × 32 >
// 256): every peer's datagrams arrive, in order, and an answer reaches
// every peer. Each sends more than its credit window, so credits must
// come back to it.
func TestPortManyPeers(t *testing.T) {
	const peers, per = 12, 80
	hub := listenOrSkip(t, Config{})
	spokes := make([]*Port, peers)
	for i := range spokes {
		spokes[i] = listenOrSkip(t, Config{RecvBuffers: 16, SendBuffers: 16})
	}
	to, err := hub.ParseEndpoint(hub.LocalEndpoint().String())
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, peers)
	var wg sync.WaitGroup
	for i, s := range spokes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; seq < per; seq++ {
				var h [8]byte
				binary.LittleEndian.PutUint32(h[:], uint32(i))
				binary.LittleEndian.PutUint32(h[4:], uint32(seq))
				if _, err := s.Send([]fabric.Datagram{{Head: h[:], Body: make([]byte, 1000), To: to}}); err != nil {
					errs <- fmt.Errorf("peer %d: %w", i, err)
					return
				}
			}
		}()
	}
	defer wg.Wait()
	next := make([]int, peers)
	from := make([]fabric.Endpoint, peers)
	msgs := make([][]byte, hub.BatchSize())
	deadline := time.Now().Add(60 * time.Second)
	for got := 0; got < peers*per; {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		n, err := hub.Wait(msgs, time.Now().Add(100*time.Millisecond))
		if err != nil && time.Now().After(deadline) {
			t.Fatalf("%d of %d datagrams in 60 s (per peer %v): hub %+v, %v", got, peers*per, next, hub.Stats(), hub.LastFailure())
		}
		for _, m := range msgs[:n] {
			if len(m) != 1008 {
				t.Fatalf("datagram of %d bytes", len(m))
			}
			i, seq := int(binary.LittleEndian.Uint32(m)), int(binary.LittleEndian.Uint32(m[4:]))
			if i >= peers || seq != next[i] {
				t.Fatalf("peer %d's datagram %d came where %v was due", i, seq, next)
			}
			next[i]++
			got++
		}
	}
	for i, s := range spokes {
		if from[i], err = hub.ParseEndpoint(s.LocalEndpoint().String()); err != nil {
			t.Fatal(err)
		}
		if _, err := hub.Send([]fabric.Datagram{{Head: []byte{byte(i)}, To: from[i]}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range spokes {
		n, err := s.Wait(msgs, time.Now().Add(20*time.Second))
		if err != nil || n != 1 || len(msgs[0]) != 1 || msgs[0][0] != byte(i) {
			t.Fatalf("peer %d's answer: %d datagrams, %v", i, n, err)
		}
	}
	if st := hub.Stats(); st.Dropped != 0 || st.HandshakeFailure != 0 || st.PeerFailures != 0 {
		t.Fatalf("hub stats %+v", st)
	}
	t.Logf("hub %+v", hub.Stats())
}
