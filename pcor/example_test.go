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

// A program started by a launcher (pcorrun -n 4 ./prog, srun, mpirun)
// passes a token around a ring of every process started. FromEnv returns
// once this process has joined; the Wait makes sure that every other has
// too before the first send, which would otherwise fail with
// ErrUnreachable. (Not run here: it needs a launcher's environment.)
func ExampleFromEnv() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node, err := pcor.FromEnv(ctx, pcor.JoinConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close()
	size := node.Directory().Size() // the number of processes started
	if size < 1 {
		// A directory that was not told the size (pcorrun --directory-only
		// without -n) gives 0.
		fmt.Println("the launcher gave no size")
		return
	}
	if err := node.Directory().Wait(ctx, size); err != nil {
		fmt.Println(err)
		return
	}
	me := node.Proc()
	next := pcor.Addr{Proc: (me + 1) % pcor.ProcID(size)}
	prev := pcor.Addr{Proc: (me + pcor.ProcID(size) - 1) % pcor.ProcID(size)}
	t := node.NewThread() // thread 0 of this process
	if me == 0 {
		err = t.Send(ctx, next, 1, []byte{0})
		if err == nil {
			var m pcor.Message
			m, err = t.Recv(ctx, prev, 1)
			if err == nil {
				fmt.Printf("the token came back through %d processes\n", m.Data[0]+1)
			}
		}
	} else {
		var m pcor.Message
		m, err = t.Recv(ctx, prev, 1)
		if err == nil {
			err = t.Send(ctx, next, 1, []byte{m.Data[0] + 1})
		}
	}
	if errors.Is(err, pcor.ErrPeerDown) {
		fmt.Println("a process of the ring went away:", err)
	} else if err != nil {
		fmt.Println(err)
	}
}
