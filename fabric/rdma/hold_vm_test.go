package rdma

import (
	"encoding/binary"
	"errors"
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

// TestWaitTaken: a sender asleep in WaitTaken (with no deadline to speak
// of) while its sends wait for a receiver that holds its datagrams back
// is woken by their completions once the receiver resumes, and Taken
// then reports them taken.
func TestWaitTaken(t *testing.T) {
	a := listenOrSkip(t, Config{RecvPerPeer: 4})
	b := listenOrSkip(t, Config{})
	to, _ := b.ParseEndpoint(a.LocalEndpoint().String())
	b.WaitTaken(to, time.Hour) // nothing sent: no sleep
	send := func(k int) {
		t.Helper()
		for i := 0; i < k; i++ {
			if _, err := b.Send([]fabric.Datagram{{Head: []byte{byte(i), 1}, To: to}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(1)
	msgs := make([][]byte, a.BatchSize())
	if _, err := a.Receive(msgs); err != nil {
		t.Fatal(err)
	}
	a.Hold(0)
	a.Handled()
	// a has 4 receives posted and reposts none while it holds: the
	// rest wait in b's transport (receiver-not-ready).
	send(10)
	done := make(chan error, 1)
	go func() {
		for k := 0; k < 10000; k++ {
			taken, err := b.Taken(to)
			if taken || err != nil {
				done <- err
				return
			}
			b.WaitTaken(to, time.Hour)
		}
		done <- errors.New("not taken after 10000 waits")
	}()
	for start := time.Now(); b.Stats().TakenWaits == 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("WaitTaken never slept while the receiver held the sender back: %+v", b.Stats())
		}
	}
	a.Resume()
	go func() {
		for {
			if _, err := a.Receive(msgs); err != nil {
				return // closed
			}
			a.Handled()
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("WaitTaken not woken in 10 s after the receiver resumed: %+v", b.Stats())
	}
	b.WaitTaken(to, time.Hour) // all taken: no sleep
	t.Logf("sender %+v", b.Stats())
}
