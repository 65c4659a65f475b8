package pcor_test

import (
	"context"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// A message of no bytes, sent as nil or as an empty slice, arrives with
// Data an empty slice, never nil: the two are the same message (the
// length is all that travels), received into the library's buffer or the
// caller's, from another process or this one.
func TestEmptyMessageData(t *testing.T) {
	a, c := udpPair(t, pcor.Blocking)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := a.NewThread()
	for _, dst := range []*pcor.Thread{c.NewThread(), a.NewThread()} {
		for _, data := range [][]byte{nil, {}} {
			for _, buf := range [][]byte{nil, make([]byte, 8)} {
				r := dst.Irecv(src.Addr(), 3, buf)
				if err := src.Send(ctx, dst.Addr(), 3, data); err != nil {
					t.Fatal(err)
				}
				if err := r.Wait(ctx); err != nil {
					t.Fatal(err)
				}
				if m := r.Message(); m.Data == nil || len(m.Data) != 0 {
					t.Errorf("to %v, sent %#v, buffer %d bytes: Data %#v, want empty, not nil", dst.Addr(), data, len(buf), m.Data)
				}
			}
			if err := src.Send(ctx, dst.Addr(), 4, data); err != nil {
				t.Fatal(err)
			}
			if m, err := dst.Recv(ctx, src.Addr(), 4); err != nil || m.Data == nil || len(m.Data) != 0 {
				t.Errorf("Recv to %v, sent %#v: Data %#v, %v, want empty, not nil", dst.Addr(), data, m.Data, err)
			}
		}
	}
}
