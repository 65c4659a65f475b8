package engine

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// A message of ownMin bytes or more arriving for a receive posted before
// it is placed straight into that receive's buffer; a smaller one, or one
// that arrives before its receive, is stored and copied.
func TestInPlaceReceive(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	inPlace := func() uint64 {
		var n uint64
		for _, s := range e1.Stats() {
			n += s.MessagesInPlace
		}
		return n
	}
	for i, c := range []struct {
		size   int
		posted bool // the receive is posted before the send
		want   uint64
	}{
		{ownMin, true, 1},
		{64 << 10, true, 1},
		{100 << 10, true, 1},
		{ownMin - 1, true, 0},
		{64 << 10, false, 0},
	} {
		data := pattern(c.size, uint64(i))
		buf := make([]byte, c.size)
		before := inPlace()
		r := e1.newRecv(0, 0, 0, 1, buf)
		s := e0.newSend(0, 1, 0, 1, data)
		if c.posted {
			e1.post(r)
			e0.post(s)
		} else {
			e0.post(s)
			if err := s.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			e1.post(r)
		}
		if err := r.Wait(ctx); err != nil || !bytes.Equal(r.Data(), data) || &r.Data()[0] != &buf[0] {
			t.Fatalf("%d bytes: %v, equal %v", c.size, err, bytes.Equal(r.Data(), data))
		}
		if err := s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if got := inPlace() - before; got != c.want {
			t.Errorf("%d bytes, posted first %v: %d messages received in place, want %d", c.size, c.posted, got, c.want)
		}
	}
}
