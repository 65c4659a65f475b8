//go:build linux

package udp

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// sendAlone sends one datagram by itself (the connected path) and fails the
// test on an error.
func sendAlone(t *testing.T, p *Port, to fabric.Endpoint, b []byte) {
	t.Helper()
	if n, err := p.Send([]fabric.Datagram{{Head: b, To: to}}); n != 1 || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
}

// TestConnectedSend: datagrams sent alone go through a socket connected to
// their destination, one per destination, and arrive; batches go through
// the port's socket.
func TestConnectedSend(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	c := listen(t, "127.0.0.1:0", Config{})
	for i := range 3 {
		for _, p := range []*Port{b, c} {
			// A fresh Endpoint each time: the socket is found by address.
			to, err := a.ParseEndpoint(p.LocalEndpoint().String())
			if err != nil {
				t.Fatal(err)
			}
			msg := []byte(fmt.Sprintf("alone %d", i))
			sendAlone(t, a, to, msg)
			if got := receiveN(t, p, 1, 5*time.Second); !bytes.Equal(got[0], msg) {
				t.Fatalf("received %q, sent %q", got[0], msg)
			}
		}
	}
	if n := a.Connected(); n != 2 {
		t.Errorf("Connected = %d, want 2 (one per destination)", n)
	}
	if s := a.Stats(); s.ConnectedSends != 6 {
		t.Errorf("ConnectedSends = %d, want 6", s.ConnectedSends)
	}
	dgs := []fabric.Datagram{{Body: []byte("x"), To: endpoint(t, b)}, {Body: []byte("yy"), To: endpoint(t, b)}}
	if _, err := a.Send(dgs); err != nil {
		t.Fatal(err)
	}
	checkSame(t, dgs, receiveN(t, b, 2, 5*time.Second))
	if s := a.Stats(); s.ConnectedSends != 6 {
		t.Errorf("ConnectedSends = %d after a batch, want 6", s.ConnectedSends)
	}
}

// TestConnectedRefused: a destination that went away and came back (a
// restarted process on the same port) gets the next datagram sent alone,
// though the connected socket kept the kernel's report of the refusal
// (ICMP port unreachable) and refuses that send.
func TestConnectedRefused(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	addr := b.LocalEndpoint().String()
	to := endpoint(t, b)
	sendAlone(t, a, to, []byte("first"))
	receiveN(t, b, 1, 5*time.Second)
	b.Close()
	sendAlone(t, a, to, []byte("to nobody")) // refused: ICMP back to the socket
	b2 := listen(t, addr, Config{})
	sendAlone(t, a, to, []byte("again"))
	if got := receiveN(t, b2, 1, 5*time.Second); string(got[0]) != "again" {
		t.Fatalf("received %q, want %q", got[0], "again")
	}
}

// TestConnectedBound: a port connects sockets to its first maxConnected
// destinations only, and the datagrams to the others go through its own.
func TestConnectedBound(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	// Destinations that are not listening are fine: the datagrams are
	// refused, counted or not, and the sockets made all the same.
	bport := endpoint(t, b).AddrPort().Port()
	for i := range maxConnected + 5 {
		to, err := a.ParseEndpoint(fmt.Sprintf("127.0.0.2:%d", int(bport)+i))
		if err != nil {
			t.Fatal(err)
		}
		sendAlone(t, a, to, []byte("x"))
	}
	if n := a.Connected(); n != maxConnected {
		t.Errorf("Connected = %d, want %d", n, maxConnected)
	}
	sendAlone(t, a, endpoint(t, b), []byte("past the bound"))
	if got := receiveN(t, b, 1, 5*time.Second); string(got[0]) != "past the bound" {
		t.Fatalf("received %q", got[0])
	}
}

// TestConnectedClosed: Close closes the connected sockets with the port.
func TestConnectedClosed(t *testing.T) {
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip(err)
		}
		return len(es)
	}
	b := listen(t, "127.0.0.1:0", Config{})
	c := listen(t, "127.0.0.1:0", Config{})
	before := fds()
	a, err := Listen("127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	withPort := fds()
	sendAlone(t, a, endpoint(t, b), []byte("b"))
	sendAlone(t, a, endpoint(t, c), []byte("c"))
	if got := fds(); got != withPort+2 {
		t.Errorf("%d descriptors with two destinations, %d before: want 2 more", got, withPort)
	}
	a.Close()
	if after := fds(); after != before {
		t.Errorf("%d descriptors after Close, %d before Listen", after, before)
	}
}

// TestConnectedNamespace: a port opened in another network namespace,
// sending from a thread of this one, connects no socket here: the
// destination's address (loopback) would reach this namespace's loopback,
// not the port's.
func TestConnectedNamespace(t *testing.T) {
	nsA, _ := netnsPair(t, 1500)
	a := listenIn(t, nsA, "127.0.0.1:0", Config{})
	b := listenIn(t, nsA, "127.0.0.1:0", Config{})
	for i := range 3 {
		msg := []byte(fmt.Sprintf("in the namespace %d", i))
		sendAlone(t, a, endpoint(t, b), msg)
		if got := receiveN(t, b, 1, 5*time.Second); !bytes.Equal(got[0], msg) {
			t.Fatalf("received %q, sent %q", got[0], msg)
		}
	}
	if n := a.Connected(); n != 0 {
		t.Errorf("Connected = %d, want 0 (sockets of another namespace)", n)
	}
}
