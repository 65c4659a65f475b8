package directory

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestOwnStallIsNotSilence stops this process, which serves the directory
// and holds a member's session, for longer than the heartbeat timeout, as
// a stall of the whole machine does. Both sides' deadlines, overdue by the
// stall, fire before either side's pings come: neither may take the
// silence, which it could not hear, for the other's. The member stays and
// its session lives.
func TestOwnStallIsNotSilence(t *testing.T) {
	const timeout = time.Second
	s := startServer(t, ServerConfig{Size: 2, HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: timeout})
	a := join(t, s, 0)
	b := join(t, s, 1)
	if ev := nextEvent(t, a, 2*time.Second); ev.Kind != Joined || ev.Member.Proc != 1 {
		t.Fatalf("got %+v", ev)
	}
	stall := 2*timeout + timeout/2
	staller := exec.Command("sh", "-c", fmt.Sprintf("kill -STOP %d; sleep %g; kill -CONT %d",
		os.Getpid(), stall.Seconds(), os.Getpid()))
	staller.Stderr = os.Stderr
	start := time.Now()
	if err := staller.Run(); err != nil {
		t.Fatalf("stall: %v", err)
	}
	if d := time.Since(start); d < stall {
		t.Fatalf("the stall lasted %v, want at least %v", d, stall)
	}
	// Pings flow again within an interval; give them a timeout's worth.
	noEvent(t, a, timeout)
	for _, c := range []*Client{a, b} {
		if err := c.Err(); err != nil {
			t.Fatalf("proc %d after the stall: %v", c.Proc(), err)
		}
	}
	if got := procs(a.Members()); len(got) != 2 {
		t.Fatalf("members after the stall %v", got)
	}
}

// TestUnread: bytes waiting in a socket are seen without being read.
func TestUnread(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if unread(s) {
		t.Fatal("unread bytes before any was sent")
	}
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !unread(s); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the byte sent is not seen waiting")
		}
	}
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := s.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if unread(s) {
		t.Fatal("unread bytes after all were read")
	}
}
