package shm

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// TestHoldResume: a held datagram, and those after it from the same
// sender, are received again in order after Resume; another sender's
// datagrams go on meanwhile; a sender to a held ring waits once the ring
// is full rather than dropping.
func TestHoldResume(t *testing.T) {
	dir := testDir(t)
	cfg := Config{RingSize: MinRingSize, MaxDatagram: 1024}
	a, c := listen(t, dir, "a", cfg), listen(t, dir, "c", cfg)
	b := listen(t, dir, "b", cfg)
	to := b.LocalEndpoint()
	for i := 0; i < 4; i++ {
		if _, err := a.Send([]fabric.Datagram{{Body: []byte{'a', byte(i)}, To: to}}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := make([][]byte, 64)
	n, err := b.Poll(msgs)
	if err != nil || n != 4 {
		t.Fatalf("got %d datagrams, %v", n, err)
	}
	if k := b.Hold(1); k != 2 {
		t.Fatalf("Hold(1) gave back %d following datagrams, want 2", k)
	}
	if _, err := c.Send([]fabric.Datagram{{Body: []byte("c0"), To: to}}); err != nil {
		t.Fatal(err)
	}
	if got := recvN(t, b, 1); string(got[0]) != "c0" {
		t.Fatalf("while a is held, received %q", got[0])
	}
	if n, _ := b.Poll(msgs); n != 0 {
		t.Fatalf("a held ring was read: %q", msgs[0])
	}
	// Fill a's ring: the sender must wait, not drop.
	sent := make(chan error, 1)
	big := make([]byte, 1000)
	go func() {
		for i := 0; i < 200; i++ {
			if _, err := a.Send([]fabric.Datagram{{Body: big, To: to}}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		t.Fatalf("200 KB went into a held 64 KiB ring: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	b.Resume()
	got := recvN(t, b, 3+200)
	for i, want := range []string{"a\x01", "a\x02", "a\x03"} {
		if string(got[i]) != want {
			t.Fatalf("datagram %d after Resume: %q, want %q", i, got[i], want)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Dropped != 0 {
		t.Fatalf("%d datagrams dropped", st.Dropped)
	}
}

// TestResumeWakes: Resume wakes a receiver asleep while its only ring is
// held, and the held datagram comes again.
func TestResumeWakes(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("x"), To: b.LocalEndpoint()}}); err != nil {
		t.Fatal(err)
	}
	msgs := make([][]byte, 4)
	if n, err := b.Receive(msgs); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	b.Hold(0)
	got := make(chan string, 1)
	go func() {
		n, err := b.Receive(msgs)
		if err != nil || n != 1 {
			got <- err.Error()
			return
		}
		got <- string(msgs[0])
	}()
	deadline := time.Now().Add(5 * time.Second)
	for b.Stats().Sleeps == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b.Resume()
	select {
	case s := <-got:
		if s != "x" {
			t.Fatalf("after Resume: %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Resume did not wake the receiver")
	}
}

// TestWaitInterruptDeadline: Wait returns 0 on Interrupt (also one made
// before it), an error matching os.ErrDeadlineExceeded at its deadline,
// and a datagram that arrives while it sleeps.
func TestWaitInterruptDeadline(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	msgs := make([][]byte, 4)
	b.Interrupt()
	if n, err := b.Wait(msgs, time.Now().Add(10*time.Second)); n != 0 || err != nil {
		t.Fatalf("Wait after Interrupt: %d %v", n, err)
	}
	start := time.Now()
	if _, err := b.Wait(msgs, time.Now().Add(20*time.Millisecond)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Wait past its deadline: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a 20 ms deadline took %v", d)
	}
	done := make(chan error, 1)
	go func() {
		n, err := b.Park(msgs)
		if err == nil && n != 0 {
			err = errors.New("Park returned a datagram")
		}
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	b.Interrupt()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Interrupt did not end Park")
	}
	go func() {
		n, err := b.Wait(msgs, time.Now().Add(20*time.Second))
		if err == nil && (n != 1 || string(msgs[0]) != "w") {
			err = errors.New("wrong datagram")
		}
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("w"), To: b.LocalEndpoint()}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not wake")
	}
}

// TestTaken: a sender sees its datagrams taken only once the receiver
// has received them and said it handled them (or received again), and
// gets an error for a receiver that closed without taking them.
func TestTaken(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	to := b.LocalEndpoint()
	if ok, err := a.Taken(to); !ok || err != nil {
		t.Fatalf("nothing sent: taken %v, %v", ok, err)
	}
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("f"), To: to}}); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Taken(to); ok || err != nil {
		t.Fatalf("unread datagram: taken %v, %v", ok, err)
	}
	msgs := make([][]byte, 4)
	if n, _ := b.Poll(msgs); n != 1 {
		t.Fatal("datagram not received")
	}
	if ok, _ := a.Taken(to); ok {
		t.Fatal("taken before the receiver handled it")
	}
	b.Handled()
	if ok, err := a.Taken(to); !ok || err != nil {
		t.Fatalf("handled datagram: taken %v, %v", ok, err)
	}
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("g"), To: to}}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := a.Taken(to)
		if ok {
			t.Fatal("a datagram to a closed receiver taken")
		}
		if errors.Is(err, ErrNoPort) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("closed receiver not noticed: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTakenBeforeReceiverLeft: datagrams a receiver read and handled
// before it closed stay taken once the sender has found it gone, however
// the sender found out (a look at its destinations, or Taken itself).
func TestTakenBeforeReceiverLeft(t *testing.T) {
	for _, how := range []string{"scan", "taken"} {
		t.Run(how, func(t *testing.T) {
			dir := testDir(t)
			a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
			to := b.LocalEndpoint()
			if _, err := a.Send([]fabric.Datagram{{Body: []byte("f"), To: to}}); err != nil {
				t.Fatal(err)
			}
			msgs := make([][]byte, 4)
			if n, _ := b.Poll(msgs); n != 1 {
				t.Fatal("datagram not received")
			}
			b.Handled()
			b.Close()
			o := a.out[to.(Endpoint).Name]
			o.mu.Lock()
			switch how {
			case "scan":
				o.mu.Unlock()
				a.scanDestinations()
				o.mu.Lock()
			case "taken":
				// The receiver read the datagram after Taken's look at the
				// ring and left before its look at whether it lives.
				o.r.pos++
				o.looks = takenLooks - 1
				o.mu.Unlock()
				if ok, err := a.Taken(to); ok || err == nil {
					t.Fatalf("unread byte: taken %v, %v", ok, err)
				}
				o.mu.Lock()
				o.r.pos--
			}
			dead := o.dead
			o.mu.Unlock()
			if !dead {
				t.Fatal("the closed receiver was not found gone")
			}
			if ok, err := a.Taken(to); !ok || err != nil {
				t.Fatalf("datagram read before the receiver left: taken %v, %v", ok, err)
			}
		})
	}
}

// TestWaitTaken: a sender asleep in WaitTaken wakes when the receiver
// hands the room of its datagrams back, long before its sleep would end;
// with nothing left to take, WaitTaken returns at once.
func TestWaitTaken(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	to := b.LocalEndpoint()
	a.WaitTaken(to, time.Hour) // nothing sent: no sleep
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("x"), To: to}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for a.Stats().TakenWaits == 0 {
			a.WaitTaken(to, time.Hour)
		}
	}()
	// Let the sender fall asleep (a receive before it does is fine too:
	// WaitTaken then returns at once).
	for i := 0; i < 100 && a.Stats().TakenWaits == 0; i++ {
		time.Sleep(time.Millisecond)
	}
	recvN(t, b, 1)
	b.Handled()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the sender slept on after its datagram was taken")
	}
	if taken, err := a.Taken(to); !taken || err != nil {
		t.Fatalf("Taken after the wait: %v, %v", taken, err)
	}
	a.WaitTaken(to, time.Hour) // all taken: no sleep
}
