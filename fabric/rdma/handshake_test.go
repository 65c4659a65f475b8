package rdma

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pcor-go/pcor/internal/verbs"
)

func TestHelloRoundTrip(t *testing.T) {
	h := hello{Remote: verbs.Remote{QPN: 0x11, PSN: 0xabcdef}, RMA: verbs.Remote{QPN: 0x12, PSN: 0x123456}, Endpoint: "10.0.2.15:4791"}
	h.GID[15] = 7
	h.RMA.GID = h.GID
	b, err := h.marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := readHello(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Fatalf("got %+v, want %+v", got, h)
	}
	for _, bad := range [][]byte{b[:10], append([]byte("XXXXXXXX"), b[8:]...), b[:len(b)-1]} {
		if _, err := readHello(bytes.NewReader(bad)); !errors.Is(err, ErrHandshake) {
			t.Fatalf("malformed hello: %v", err)
		}
	}
	zero := hello{Endpoint: "x"}
	zb, _ := zero.marshal()
	if _, err := readHello(bytes.NewReader(zb)); !errors.Is(err, ErrHandshake) {
		t.Fatalf("QPN 0 accepted: %v", err)
	}
	long := hello{Endpoint: string(make([]byte, 300))}
	if _, err := long.marshal(); !errors.Is(err, ErrHandshake) {
		t.Fatalf("long endpoint: %v", err)
	}
}
