package engine

import (
	"testing"
	"time"
)

// TestUnreadQueueTime: a send queued on the reliable path leaves the
// stream's pendingSince unread (0, no clock read); if the message then
// goes by the datagram path (the routes changed), the retransmission
// timer counts the silence from its own first run, and does not take the
// peer, last heard from long ago, for unreachable at once.
func TestUnreadQueueTime(t *testing.T) {
	// The clock counts from the package's start: let it pass a second, so
	// that the unreachable timeout can be half of it and a time of 0 lies
	// beyond it.
	if d := time.Second - time.Duration(nanotime()); d > 0 {
		time.Sleep(d)
	}
	timeout := time.Duration(nanotime() / 2)
	e0, _ := memPair(t, Config{UnreachableTimeout: timeout})
	p := e0.peer(1)
	if p == nil {
		t.Fatal("no peer")
	}
	r := e0.newSend(0, 1, 0, 5, []byte("x"))
	p.mu.Lock()
	r.peer = p
	p.tx.enqueue(r)
	p.tx.pendingSince = 0 // as isend leaves it on the reliable path
	p.mu.Unlock()
	p.lastHeard.Store(1) // long ago
	p.onTimer()
	p.mu.Lock()
	failed := p.tx.failed
	p.mu.Unlock()
	if failed != nil {
		t.Fatalf("the first timer failed the peer (unreachable timeout %v): %v", timeout, failed)
	}
}
