package engine

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// A message that arrived before its sender was removed is still received
// (small, bundled, and one of several fragments); only receives that
// nothing can satisfy any more fail with ErrPeerDown.
func TestMessagesOfDepartedPeerAreReceived(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sizes := []int{0, 8, 200 << 10}
	for i, n := range sizes {
		s := e0.newSend(3, 1, 4, Tag(9+i), pattern(n, uint64(n)))
		e0.post(s)
		if err := s.Wait(ctx); err != nil {
			t.Fatalf("send %d: %v", n, err)
		}
	}
	e1.RemovePeer(0, &PeerDownError{Proc: 0, Reason: "left"})
	for i, n := range sizes {
		r := e1.newRecv(4, 0, 3, Tag(9+i), nil)
		e1.post(r)
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("receive of %d bytes sent before the sender left: %v", n, err)
		}
		if !bytes.Equal(r.Data(), pattern(n, uint64(n))) {
			t.Fatalf("%d bytes: data differs", n)
		}
	}
	for _, tag := range []Tag{9, 10, AnyTag} {
		r := e1.newRecv(4, 0, 3, tag, nil)
		e1.post(r)
		if err := r.Wait(ctx); !errors.Is(err, ErrPeerDown) {
			t.Fatalf("receive (tag %d) from a departed peer with nothing left: %v, want ErrPeerDown", tag, err)
		}
	}
}
