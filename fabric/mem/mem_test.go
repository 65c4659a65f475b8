package mem

import (
	"errors"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

func TestSendReceiveClose(t *testing.T) {
	n := NewNetwork()
	a, err := n.Listen("a")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := n.Listen("b")
	if _, err := n.Listen("a"); !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("duplicate name: %v", err)
	}
	body := []byte("payload")
	dgs := []fabric.Datagram{{Head: []byte("h1"), Body: body, To: Endpoint("b")}, {Head: []byte("h2"), To: Endpoint("nowhere")}}
	if k, err := a.Send(dgs); err != nil || k != 2 {
		t.Fatalf("send: %d %v", k, err)
	}
	body[0] = 'X' // the datagram was copied
	msgs := make([][]byte, 4)
	if k, err := b.Receive(msgs); err != nil || k != 1 || string(msgs[0]) != "h1payload" {
		t.Fatalf("receive: %d %v %q", k, err, msgs[0])
	}
	if k, _ := b.Poll(msgs); k != 0 {
		t.Fatal("poll found a datagram")
	}
	if _, err := a.Send([]fabric.Datagram{{Body: make([]byte, DefaultMaxDatagram+1), To: Endpoint("b")}}); !errors.Is(err, fabric.ErrTooBig) {
		t.Fatalf("oversize: %v", err)
	}
	done := make(chan error)
	go func() { _, err := b.Receive(msgs); done <- err }()
	time.Sleep(10 * time.Millisecond)
	b.Close()
	b.Close()
	if err := <-done; !errors.Is(err, fabric.ErrClosed) {
		t.Fatalf("receive after close: %v", err)
	}
	if _, err := n.Listen("b"); err != nil {
		t.Fatalf("name not freed on close: %v", err)
	}
}
