package directory

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestJoinLeaveEvents(t *testing.T) {
	s := startServer(t, ServerConfig{Size: 3})
	a := join(t, s, 0)
	if a.Proc() != 0 {
		t.Fatalf("proc %d, want 0", a.Proc())
	}
	if got := procs(a.Members()); !slices.Equal(got, []uint32{0}) {
		t.Fatalf("members %v", got)
	}
	b := join(t, s, 1)
	if got := procs(b.Members()); !slices.Equal(got, []uint32{0, 1}) {
		t.Fatalf("b's members %v", got)
	}
	ev := nextEvent(t, a, 2*time.Second)
	if ev.Kind != Joined || ev.Member.Proc != 1 || ev.Member.Ports[0].Addr != "127.0.0.1:1" {
		t.Fatalf("a got %+v, want 1 joined", ev)
	}
	if m, ok := a.Lookup(1); !ok || m.Host == "" {
		t.Fatalf("lookup 1: %+v %v", m, ok)
	}
	c := join(t, s, 2)
	nextEvent(t, a, 2*time.Second)
	nextEvent(t, b, 2*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := b.Leave(ctx); err != nil {
		t.Fatalf("leave: %v", err)
	}
	if !errors.Is(b.Err(), ErrClosed) {
		t.Fatalf("after leave: %v", b.Err())
	}
	for _, x := range []*Client{a, c} {
		ev := nextEvent(t, x, 2*time.Second)
		if ev.Kind != Left || ev.Member.Proc != 1 || ev.Reason != ReasonLeft {
			t.Fatalf("proc %d got %+v, want 1 left", x.Proc(), ev)
		}
		if _, ok := x.Lookup(1); ok {
			t.Fatalf("proc %d still has 1 in its cache", x.Proc())
		}
	}
	c.Close()
	ev = nextEvent(t, a, 2*time.Second)
	if ev.Kind != Left || ev.Member.Proc != 2 || ev.Reason != ReasonClosed {
		t.Fatalf("got %+v, want 2 left (closed)", ev)
	}
	if got := procs(s.Members()); !slices.Equal(got, []uint32{0}) {
		t.Fatalf("server members %v", got)
	}
}

func TestWrongJobKeyRefused(t *testing.T) {
	var mu sync.Mutex
	var events []Event
	s := startServer(t, ServerConfig{Size: 2, OnEvent: func(ev Event) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}})
	a := join(t, s, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := Join(ctx, s.Addr().String(), JoinRequest{JobKey: testKey ^ 1, Proc: 1, Ports: testPorts("127.0.0.1:2")})
	if !errors.Is(err, ErrBadJobKey) {
		t.Fatalf("join with wrong key: %v, want ErrBadJobKey", err)
	}
	_, err = Join(ctx, s.Addr().String(), JoinRequest{JobKey: testKey ^ 1, Proc: AnyProc})
	if !errors.Is(err, ErrBadJobKey) {
		t.Fatalf("join with wrong key: %v, want ErrBadJobKey", err)
	}
	noEvent(t, a, 200*time.Millisecond)
	if got := procs(s.Members()); !slices.Equal(got, []uint32{0}) {
		t.Fatalf("server members %v", got)
	}
	// The refused process's id is still free.
	join(t, s, 1)
	if ev := nextEvent(t, a, 2*time.Second); ev.Member.Proc != 1 {
		t.Fatalf("got %+v", ev)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 {
		t.Fatalf("server saw %d events, want 2", len(events))
	}
}

func TestProcTaken(t *testing.T) {
	s := startServer(t, ServerConfig{Size: 2})
	join(t, s, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := Join(ctx, s.Addr().String(), JoinRequest{JobKey: testKey, Proc: 1})
	if !errors.Is(err, ErrProcTaken) {
		t.Fatalf("got %v, want ErrProcTaken", err)
	}
}

func TestLateJoiner(t *testing.T) {
	s := startServer(t, ServerConfig{Size: 2})
	a := join(t, s, 0)
	b := join(t, s, 1)
	nextEvent(t, a, 2*time.Second)
	late := join(t, s, AnyProc)
	if late.Proc() != 2 {
		t.Fatalf("late joiner got %d, want 2 (first id past the size)", late.Proc())
	}
	if got := procs(late.Members()); !slices.Equal(got, []uint32{0, 1, 2}) {
		t.Fatalf("late joiner sees %v", got)
	}
	for _, x := range []*Client{a, b} {
		if ev := nextEvent(t, x, 2*time.Second); ev.Kind != Joined || ev.Member.Proc != 2 {
			t.Fatalf("proc %d got %+v", x.Proc(), ev)
		}
	}
	// Ids below Size stay reserved for ranks even when free.
	b.Close()
	late2 := join(t, s, AnyProc)
	if late2.Proc() != 3 {
		t.Fatalf("second late joiner got %d, want 3", late2.Proc())
	}
}

func TestWait(t *testing.T) {
	s := startServer(t, ServerConfig{Size: 3})
	a := join(t, s, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := a.Wait(ctx, 3)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait with 1 of 3: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- a.Wait(ctx, 3)
	}()
	join(t, s, 1)
	join(t, s, 2)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestServerGoneEndsSession(t *testing.T) {
	s := startServer(t, ServerConfig{Size: 1})
	a := join(t, s, 0)
	s.Close()
	select {
	case <-a.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("client did not notice the server closing")
	}
	if !errors.Is(a.Err(), ErrLost) {
		t.Fatalf("err %v, want ErrLost", a.Err())
	}
	if _, ok := <-a.Events(); ok {
		t.Fatal("events channel still open")
	}
	if !errors.Is(s.Err(), ErrClosed) {
		t.Fatalf("server err %v", s.Err())
	}
}

func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, ServerConfig{JobKey: testKey}) }()
	jctx, jcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer jcancel()
	c, err := Join(jctx, ln.Addr().String(), JoinRequest{JobKey: testKey, Proc: AnyProc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve returned %v", err)
	}
	<-c.Done()
}

func TestJoinContext(t *testing.T) {
	// A listener that accepts but never answers: the handshake must end
	// with the context.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = Join(ctx, ln.Addr().String(), JoinRequest{JobKey: testKey})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want deadline exceeded", err)
	}
}

func TestJoinBadRequest(t *testing.T) {
	ctx := context.Background()
	for _, req := range []JoinRequest{
		{Proc: -2},
		{Ports: []PortInfo{{Fabric: "udp"}}},
		{Ports: []PortInfo{{Fabric: "udp", Addr: "x", Latency: -1}}},
	} {
		if _, err := Join(ctx, "127.0.0.1:1", req); err == nil {
			t.Errorf("join %+v: no error", req)
		}
	}
}
