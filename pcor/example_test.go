package pcor_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// Two processes' nodes, here in one program, each with a UDP port on
// loopback: thread 0 of process 0 sends a message to thread 0 of process
// 1, which answers. In a real application each node is in its own process
// (see FromEnv for one started by pcorrun, Slurm or mpirun).
func ExampleNewNode() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const jobKey = 0x1234 // the same non-zero key in every process of one run
	var nodes [2]*pcor.Node
	for i := range nodes {
		n, err := pcor.NewNode(pcor.Config{
			Proc:   pcor.ProcID(i),
			JobKey: jobKey,
			Listen: []pcor.Listen{{Addr: "127.0.0.1:0"}}, // any free port
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer n.Close()
		nodes[i] = n
	}
	// Each node learns where the other listens (Config.Peers when the
	// addresses are known beforehand).
	nodes[0].AddPeer(pcor.Peer{Proc: 1, Addr: nodes[1].Endpoints()[0].Addr})
	nodes[1].AddPeer(pcor.Peer{Proc: 0, Addr: nodes[0].Endpoints()[0].Addr})

	done := make(chan error, 1)
	go func() { // process 1, thread 0: answers one message
		t := nodes[1].NewThread()
		msg, err := t.Recv(ctx, pcor.Any, pcor.AnyTag)
		if err != nil {
			done <- err
			return
		}
		done <- t.Send(ctx, msg.Src, msg.Tag+1, append([]byte("re: "), msg.Data...))
	}()

	t := nodes[0].NewThread() // process 0, thread 0
	req := t.Irecv(pcor.Addr{Proc: 1, Thread: 0}, 8, nodes[0].Alloc(1<<10))
	if err := t.Send(ctx, pcor.Addr{Proc: 1, Thread: 0}, 7, []byte("hello")); err != nil {
		fmt.Println(err)
		return
	}
	if err := req.Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	m := req.Message()
	fmt.Printf("%s from %v, tag %d\n", m.Data, m.Src, m.Tag)
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	// Output:
	// re: hello from <1,0>, tag 8
}

// Errors are tested with errors.Is (and errors.As for the typed ones that
// name a process).
func ExampleErrTruncated() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := pcor.NewNode(pcor.Config{JobKey: 0x1234, MaxMessage: 1 << 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close()
	a, b := n.NewThread(), n.NewThread() // two threads of one process

	err = a.Send(ctx, b.Addr(), 1, make([]byte, 2<<10))
	var tooLarge *pcor.TooLargeError
	fmt.Println(errors.Is(err, pcor.ErrTooLarge), errors.As(err, &tooLarge) && tooLarge.Limit == 1<<10)

	if err := a.Send(ctx, b.Addr(), 1, make([]byte, 100)); err != nil {
		fmt.Println(err)
		return
	}
	_, err = b.RecvInto(ctx, a.Addr(), 1, make([]byte, 10))
	fmt.Println(errors.Is(err, pcor.ErrTruncated))

	n.Close()
	_, err = b.Recv(ctx, pcor.Any, pcor.AnyTag)
	fmt.Println(errors.Is(err, pcor.ErrClosed))
	// Output:
	// true true
	// true
	// true
}
