package directory

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"
)

const testKey = 0x5eed5eed12345678

func startServer(t *testing.T, cfg ServerConfig) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.JobKey == 0 {
		cfg.JobKey = testKey
	}
	s, err := NewServer(ln, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func testPorts(addr string) []PortInfo {
	return []PortInfo{{Fabric: "udp", Network: "default", Addr: addr}}
}

func join(t *testing.T, s *Server, proc int) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Join(ctx, s.Addr().String(), JoinRequest{JobKey: testKey, Proc: proc, Ports: testPorts("127.0.0.1:1")})
	if err != nil {
		t.Fatalf("join as %d: %v", proc, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// nextEvent waits for c's next event.
func nextEvent(t *testing.T, c *Client, within time.Duration) Event {
	t.Helper()
	select {
	case ev, ok := <-c.Events():
		if !ok {
			t.Fatalf("proc %d: events closed: %v", c.Proc(), c.Err())
		}
		return ev
	case <-time.After(within):
		t.Fatalf("proc %d: no event within %v", c.Proc(), within)
	}
	return Event{}
}

// noEvent checks that c receives no event for a while.
func noEvent(t *testing.T, c *Client, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-c.Events():
		if !ok {
			t.Fatalf("proc %d: the client ended: %v", c.Proc(), c.Err())
		}
		t.Fatalf("proc %d: unexpected event %+v", c.Proc(), ev)
	case <-time.After(d):
	}
}

func procs(ms []Member) []uint32 {
	var ps []uint32
	for _, m := range ms {
		ps = append(ps, m.Proc)
	}
	return ps
}

// awaitEvent waits for c's next event; open is false if c's events
// ended (the client ended). Nothing coming within is fatal.
func awaitEvent(t *testing.T, c *Client, within time.Duration) (ev Event, open bool) {
	t.Helper()
	select {
	case ev, open = <-c.Events():
		return ev, open
	case <-time.After(within):
		t.Fatalf("proc %d: no event within %v", c.Proc(), within)
	}
	return Event{}, false
}

// againAfterStalls runs a case until it ends without a loss that a stall
// of this process may explain (run returns that stall, or 0 when it saw
// no such loss), at most five times; lost says what was lost.
func againAfterStalls(t *testing.T, lost string, run func() time.Duration) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		stall := run()
		if stall == 0 {
			return
		}
		if attempt == 5 {
			t.Fatalf("%s in each of %d attempts, each during a stall of this process (the last %v)", lost, attempt, stall)
		}
		t.Logf("attempt %d: %s during a %v stall of this process; again", attempt, lost, stall)
	}
}

// stallWatch reads the clock every 10 ms in a goroutine of its own and
// keeps the longest time between two reads: a stall of this process (it
// got no CPU, or the runtime stopped it). The function it returns ends
// the watch (once; later calls return the same) and returns that time.
func stallWatch() func() time.Duration {
	done := make(chan struct{})
	res := make(chan time.Duration, 1)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var worst time.Duration
		last := time.Now()
		for {
			select {
			case <-done:
				res <- max(worst, time.Since(last))
				return
			case <-tick.C:
				now := time.Now()
				worst = max(worst, now.Sub(last))
				last = now
			}
		}
	}()
	var once sync.Once
	var worst time.Duration
	return func() time.Duration {
		once.Do(func() {
			close(done)
			worst = <-res
		})
		return worst
	}
}
