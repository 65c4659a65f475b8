package pcor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/pcor"
)

// A blocking Send to a process that receives the message and closes at
// once succeeds: the message was received. The process's leave, announced
// by the directory over its own connection, can come before the process's
// acknowledgement is read from the UDP socket; the send must not fail with
// ErrPeerDown for it. Each round a new member joins, asks process 0 over
// UDP, receives the answer and closes.
func TestLastMessageBeforeCloseIsSent(t *testing.T) {
	coord, err := freeTCP()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	udp := []pcor.Listen{{Addr: "127.0.0.1:0"}}
	n0, err := pcor.Join(ctx, pcor.JoinConfig{Coord: coord, JobKey: jobKey, Size: 1, Directory: directory.ServeEmbed, Listen: udp})
	if err != nil {
		t.Fatal(err)
	}
	defer n0.Close()
	th0 := n0.NewThread()
	const rounds = 100
	deadline := time.Now().Add(90 * time.Second)
	var failed []int
	var first error
	for i := 1; i <= rounds && time.Now().Before(deadline); i++ {
		n, err := pcor.Join(ctx, pcor.JoinConfig{Coord: coord, JobKey: jobKey, Rank: i, Directory: directory.ServeNever, Listen: udp})
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		// The member asks, receives the answer and closes at once.
		done := make(chan error, 1)
		go func() {
			defer n.Close()
			th := n.NewThread()
			if err := th.Send(ctx, pcor.Addr{Proc: 0}, 1, []byte("ask")); err != nil {
				done <- err
				return
			}
			_, err := th.Recv(ctx, pcor.Addr{Proc: 0}, 2)
			done <- err
		}()
		m, err := th0.Recv(ctx, pcor.Any, 1)
		if err != nil {
			t.Fatalf("round %d: ask: %v", i, err)
		}
		sendErr := th0.Send(ctx, m.Src, 2, []byte("answer"))
		if err := <-done; err != nil {
			t.Fatalf("round %d: member: %v", i, err)
		}
		if sendErr != nil {
			if !errors.Is(sendErr, pcor.ErrPeerDown) {
				t.Fatalf("round %d: answer: %v", i, sendErr)
			}
			failed = append(failed, i)
			if first == nil {
				first = sendErr
			}
		}
	}
	if len(failed) > 0 {
		t.Fatalf("%d blocking sends of a message received failed (rounds %v), the first with %v", len(failed), failed, first)
	}
}
