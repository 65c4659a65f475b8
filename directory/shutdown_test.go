package directory

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// A directory served by rank 0 outlives rank 0's own exit: its Close waits
// until the other members have left, so their orderly leave is still
// acknowledged and announced.
func TestEmbeddedDirectoryOutlivesMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	coord := freeAddr(t)
	env := Env{Coord: coord, Rank: 0, Size: 3, JobKey: testKey, HasJobKey: true, Directory: ServeAuto}
	c0, srv, err := Bootstrap(ctx, env, JoinRequest{Ports: testPorts("127.0.0.1:1")}, ServerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if srv == nil {
		t.Fatal("rank 0 did not serve the directory")
	}
	defer srv.Close()
	c1, c2 := joinAt(t, coord, 1), joinAt(t, coord, 2)
	if c1.Size() != 3 || c2.Size() != 3 {
		t.Fatalf("size seen by members: %d, %d, want 3", c1.Size(), c2.Size())
	}
	if err := c0.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	if err := c1.Leave(ctx); err != nil {
		t.Fatalf("member 1 leaving after rank 0 closed: %v", err)
	}
	for ev := range c2.Events() {
		if ev.Kind == Left && ev.Member.Proc == 1 {
			if ev.Reason != ReasonLeft {
				t.Fatalf("1 left with %q", ev.Reason)
			}
			break
		}
	}
	select {
	case <-closed:
		t.Fatal("directory closed while member 2 was still in")
	case <-time.After(100 * time.Millisecond):
	}
	if err := c2.Leave(ctx); err != nil {
		t.Fatalf("member 2 leaving: %v", err)
	}
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("directory still open after every member left")
	}
}

// Shutdown waits for members only until its context ends.
func TestShutdownDeadline(t *testing.T) {
	s := startServer(t, ServerConfig{})
	c := join(t, s, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown with a member in: %v", err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("member session still open after Shutdown gave up")
	}
}

// Wait returns only once OnEvent has handled the changes it counted: a
// node waiting for its peers then has routes to them.
func TestWaitFollowsOnEvent(t *testing.T) {
	s := startServer(t, ServerConfig{Size: 2})
	entered, release := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c0, err := Join(ctx, s.Addr().String(), JoinRequest{JobKey: testKey, Proc: 0, OnEvent: func(ev Event) {
		if ev.Kind == Joined && ev.Member.Proc == 1 {
			close(entered)
			<-release
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	join(t, s, 1)
	<-entered
	waited := make(chan error, 1)
	go func() { waited <- c0.Wait(ctx, 2) }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned (%v) while OnEvent still handled the join", err)
	case <-time.After(100 * time.Millisecond):
	}
	unblock()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}

func joinAt(t *testing.T, addr string, proc int) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := JoinRetry(ctx, addr, JoinRequest{JobKey: testKey, Proc: proc, Ports: testPorts("127.0.0.1:1")})
	if err != nil {
		t.Fatalf("join as %d: %v", proc, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
