package rdma

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// TestPortHold holds a sender's datagrams back: nothing more of it is
// delivered, its Send waits once the receives posted for it are used up
// (receiver-not-ready) and Taken says its datagrams are not all taken;
// after Resume every datagram comes, once and in order, and the Send
// returns.
func TestPortHold(t *testing.T) {
	a := listenOrSkip(t, Config{})
	b := listenOrSkip(t, Config{})
	to, _ := b.ParseEndpoint(a.LocalEndpoint().String())
	const total = 300 // more than a's receives and b's send queue hold
	sent := make(chan error, 1)
	go func() {
		for seq := 0; seq < total; seq++ {
			var h [8]byte
			binary.LittleEndian.PutUint64(h[:], uint64(seq))
			if _, err := b.Send([]fabric.Datagram{{Head: h[:], Body: make([]byte, 1000), To: to}}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	msgs := make([][]byte, a.BatchSize())
	next := uint64(0)
	take := func(n int) {
		t.Helper()
		for _, m := range msgs[:n] {
			if seq := binary.LittleEndian.Uint64(m); seq != next {
				t.Fatalf("datagram %d came where %d was due", seq, next)
			}
			next++
		}
	}
	n, err := a.Receive(msgs)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the first one: it and every later one stay in the port.
	if k := a.Hold(0); k != n-1 {
		t.Fatalf("Hold(0) of a batch of %d from one sender gave back %d after it", n, k)
	}
	a.Handled()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if k, err := a.Poll(msgs); err != nil || k != 0 {
			t.Fatalf("a held sender's datagrams were delivered: %d (%v)", k, err)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-sent:
		t.Fatalf("the held sender's Send did not wait (%v): %+v", err, b.Stats())
	default:
	}
	if taken, err := b.Taken(to); taken || err != nil {
		t.Fatalf("Taken while held: %v, %v", taken, err)
	}
	if st := a.Stats(); st.Held != 1 {
		t.Fatalf("stats %+v, want Held 1", st)
	}
	a.Resume()
	for next < total {
		n, err := a.Receive(msgs)
		if err != nil {
			t.Fatal(err)
		}
		take(n)
		a.Handled()
	}
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the Send did not return after Resume")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if taken, err := b.Taken(to); err != nil {
			t.Fatal(err)
		} else if taken {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Taken never true after everything was received")
		}
	}
	if st := b.Stats(); st.Dropped != 0 || st.PeerFailures != 0 {
		t.Fatalf("sender stats %+v", st)
	}
	t.Logf("receiver %+v", a.Stats())
}
