package rdma

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// TestPortManyPeers: one port with the default configuration serves more
// peers than its first receive buffers give RecvPerPeer each (12 × 32 >
// 256): its pool grows as they connect. Every peer's datagrams arrive, in
// order, and an answer reaches every peer.
func TestPortManyPeers(t *testing.T) {
	const peers, per = 12, 80
	hub := listenOrSkip(t, Config{})
	t.Logf("hub: at most %d receive buffers", hub.cfg.MaxRecvBuffers)
	// The senders are waited for after the spokes have closed (cleanups
	// run last first): a sender still blocked in Send when the test fails
	// then returns.
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	spokes := make([]*Port, peers)
	for i := range spokes {
		// The hub answers the 12 REQs one after the other, each with
		// queue pairs to create: a loaded host takes seconds for them.
		spokes[i] = listenOrSkip(t, Config{RecvBuffers: 16, SendBuffers: 16, HandshakeTimeout: time.Minute})
	}
	to, err := hub.ParseEndpoint(hub.LocalEndpoint().String())
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, peers)
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
				if st := s.Stats(); st.Dropped != 0 {
					errs <- fmt.Errorf("peer %d dropped datagram %d: %+v, %v (hub: %v)", i, seq, st, s.PeerLostCause(to), hub.LastFailure())
					return
				}
			}
		}()
	}
	next := make([]int, peers)
	msgs := make([][]byte, hub.BatchSize())
	deadline := time.Now().Add(5 * time.Minute)
	for got := 0; got < peers*per; {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		n, err := hub.Wait(msgs, time.Now().Add(100*time.Millisecond))
		if err != nil && time.Now().After(deadline) {
			t.Fatalf("%d of %d datagrams in 5 minutes (per peer %v): hub %+v, %v", got, peers*per, next, hub.Stats(), hub.LastFailure())
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
		from, err := hub.ParseEndpoint(s.LocalEndpoint().String())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hub.Send([]fabric.Datagram{{Head: []byte{byte(i)}, To: from}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range spokes {
		n, err := s.Wait(msgs, time.Now().Add(time.Minute))
		if err != nil || n != 1 || len(msgs[0]) != 1 || msgs[0][0] != byte(i) {
			t.Fatalf("peer %d's answer: %d datagrams, %v", i, n, err)
		}
	}
	if st := hub.Stats(); st.Dropped != 0 || st.HandshakeFailure != 0 || st.PeerFailures != 0 {
		t.Fatalf("hub stats %+v", st)
	}
	hub.rxMu.Lock()
	n := hub.recv.n
	hub.rxMu.Unlock()
	if n < peers*hub.cfg.RecvPerPeer {
		t.Fatalf("the hub's pool has %d buffers for %d peers of %d each", n, peers, hub.cfg.RecvPerPeer)
	}
	t.Logf("hub %+v, %d receive buffers", hub.Stats(), n)
}

// TestPortPeerLimit: a port whose receive pool has reached
// Config.MaxRecvBuffers refuses one more peer, and both sides say why at
// once: the dialer's send fails its handshake with the refusal (not with
// no answer after HandshakeTimeout), the port records the cause for that
// peer.
func TestPortPeerLimit(t *testing.T) {
	hub := listenOrSkip(t, Config{RecvBuffers: 8, RecvPerPeer: 8, MaxRecvBuffers: 16, HandshakeTimeout: time.Minute})
	to, err := hub.ParseEndpoint(hub.LocalEndpoint().String())
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([][]byte, hub.BatchSize())
	for i := range 3 {
		s := listenOrSkip(t, Config{RecvBuffers: 8, SendBuffers: 8, HandshakeTimeout: time.Minute})
		if _, err := s.Send([]fabric.Datagram{{Head: []byte{byte(i)}, To: to}}); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if i < 2 {
			if st.Dropped != 0 || st.Connects != 1 {
				t.Fatalf("peer %d: %+v, %v", i, st, s.PeerLostCause(to))
			}
			if n, err := hub.Wait(msgs, time.Now().Add(time.Minute)); err != nil || n != 1 || msgs[0][0] != byte(i) {
				t.Fatalf("peer %d's datagram: %d, %v", i, n, err)
			}
			continue
		}
		if st.Dropped != 1 || st.HandshakeFailure != 1 {
			t.Fatalf("the third peer connected past the limit: %+v", st)
		}
		// Refused (REJ), not "no answer" after HandshakeTimeout.
		if err := s.PeerLostCause(to); err == nil || !strings.Contains(err.Error(), "refused the connection: its receive buffer pool is at its limit") {
			t.Fatalf("the dialer's cause: %v", err)
		}
		from, _ := hub.ParseEndpoint(s.LocalEndpoint().String())
		if err := hub.PeerLostCause(from); err == nil || !strings.Contains(err.Error(), "Config.MaxRecvBuffers") {
			t.Fatalf("the port's cause: %v", err)
		}
	}
}
