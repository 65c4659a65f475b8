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
//
// After the stall, the process must get the CPU to ping: a second stall
// of it then, which ends just before a deadline, cannot be told from
// silence (see TestHeartbeatLossDetected). A member lost while stallWatch
// saw such a stall after the first is run again, at most five times.
func TestOwnStallIsNotSilence(t *testing.T) {
	againAfterStalls(t, "a member was lost after the deliberate stall", func() time.Duration { return ownStall(t, time.Second) })
}

// ownStall runs TestOwnStallIsNotSilence's case once. It returns the
// longest further stall of this process seen when a member was lost after
// the deliberate stall, else 0.
func ownStall(t *testing.T, timeout time.Duration) time.Duration {
	s := startServer(t, ServerConfig{Size: 2, HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: timeout})
	defer s.Close()
	a := join(t, s, 0)
	defer a.Close()
	b := join(t, s, 1)
	defer b.Close()
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
	watch := stallWatch()
	defer watch()
	// Pings flow again within an interval; give them a timeout's worth.
	open := true
	select {
	case ev, ok := <-a.Events():
		if ok {
			t.Fatalf("unexpected event %+v", ev)
		}
		open = false
	case <-time.After(timeout):
	}
	lost := a.Err() != nil || b.Err() != nil || !open
	if lost {
		if again := watch(); again >= timeout/4 {
			return again
		}
	}
	for _, c := range []*Client{a, b} {
		if err := c.Err(); err != nil {
			t.Fatalf("proc %d after the stall: %v (this process's longest stall since %v)", c.Proc(), err, watch())
		}
	}
	if !open {
		t.Fatalf("proc 0's events ended after the stall")
	}
	if got := procs(a.Members()); len(got) != 2 {
		t.Fatalf("members after the stall %v", got)
	}
	return 0
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
