// Command ring passes a token around a ring of pcor processes.
//
//	pcorrun -n 4 ring -rounds 1000
//
//	srun -n 4 ring
//	mpirun -n 4 ring
//
// The ring's size is the number of processes the launcher started, as the
// directory tells every member. Rank 0 starts the token; every process
// adds one and passes it to the next rank; after the last round rank 0
// checks the count. Each ring process also answers visitors: a process
// joining the running application (no rank, so the directory gives it an
// id at or above the size) greets every ring process and waits for its
// answer.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/pcor"
)

const (
	tagToken pcor.Tag = 1
	tagVisit pcor.Tag = 2
	tagReply pcor.Tag = 3
	tagDone  pcor.Tag = 4
	tagBye   pcor.Tag = 5

	tokenThread   pcor.ThreadID = 0
	serviceThread pcor.ThreadID = 1
)

// exitPeerDown is the exit status of a ring process whose pcor call failed
// with pcor.ErrPeerDown, so that the launcher's log tells a lost member
// from any other failure.
const exitPeerDown = 3

// brokenGrace is how long a process goes on after a member failed before
// it gives up the ring itself: the calls naming a process gone fail with
// pcor.ErrPeerDown at once, and each process waits on a neighbour, so the
// failure reaches every process from neighbour to neighbour well before.
const brokenGrace = 2 * time.Second

func main() {
	rounds := flag.Int("rounds", 1000, "times the token goes around")
	delay := flag.Duration("delay", 0, "pause before passing the token on")
	visitors := flag.Int("visitors", 0, "visitors each ring process waits for and answers before exiting")
	timeout := flag.Duration("timeout", time.Minute, "give up after this long")
	flag.Parse()
	if err := run(*rounds, *delay, *visitors, *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "ring: %v\n", err)
		if errors.Is(err, pcor.ErrPeerDown) {
			os.Exit(exitPeerDown)
		}
		os.Exit(1)
	}
}

func run(rounds int, delay time.Duration, visitors int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeoutCause(context.Background(), timeout, errors.New("timed out"))
	defer cancel()
	ringCtx, broken := context.WithCancelCause(ctx)
	defer broken(nil)
	w := &watch{zeroGone: make(chan struct{}), broken: broken}
	node, err := pcor.FromEnv(ctx, pcor.JoinConfig{OnEvent: w.event})
	if err != nil {
		return err
	}
	defer node.Close()
	size := node.Directory().Size()
	if size < 1 {
		return errors.New("the directory does not know how many processes were started (no launcher gave the size; a directory of pcorrun --directory-only needs -n N)")
	}
	w.start(size)
	zeroGone := w.zeroGone
	me := int(node.Proc())
	fmt.Printf("process %d pid %d joined\n", me, os.Getpid())
	if me >= size {
		return visit(ctx, node, size)
	}
	if err := node.Directory().Wait(ctx, size); err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- serve(ctx, node.Thread(serviceThread), visitors) }()
	if err := passToken(ringCtx, node.Thread(tokenThread), me, size, rounds, delay); err != nil {
		if cause := context.Cause(ringCtx); cause != nil && ringCtx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		reportPorts(node)
		return err
	}
	if err := <-served; err != nil {
		return err
	}
	return finish(ringCtx, node, me, size, zeroGone)
}

// watch follows the ring members' departures. Events arriving before the
// size is known (while joining) are held until start.
type watch struct {
	zeroGone chan struct{}
	broken   func(error)

	mu   sync.Mutex
	size int // 0 until start
	held []directory.Event
}

func (w *watch) event(ev directory.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.size == 0 {
		w.held = append(w.held, ev)
		return
	}
	w.handleLocked(ev)
}

func (w *watch) start(size int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.size = size
	for _, ev := range w.held {
		w.handleLocked(ev)
	}
	w.held = nil
}

func (w *watch) handleLocked(ev directory.Event) {
	if ev.Kind != directory.Left || int(ev.Member.Proc) >= w.size {
		return
	}
	if ev.Reason == directory.ReasonLeft {
		// Processes leave on purpose only at the end of the run.
		if ev.Member.Proc == 0 {
			close(w.zeroGone)
		}
		return
	}
	// A ring member is gone before the end: the ring cannot complete.
	err := fmt.Errorf("ring member %d left (%s): %w", ev.Member.Proc, ev.Reason, pcor.ErrPeerDown)
	time.AfterFunc(brokenGrace, func() { w.broken(err) })
}

// finish ends the run without losing a last acknowledgement: rank 0 tells
// everyone the ring is over and leaves once each has taken the word; the
// others leave only after rank 0 has gone, so no process exits while a
// message to it may still be unacknowledged.
func finish(ctx context.Context, node *pcor.Node, me, size int, zeroGone <-chan struct{}) error {
	t := node.Thread(tokenThread)
	if me == 0 {
		for r := 1; r < size; r++ {
			if err := t.Send(ctx, pcor.Addr{Proc: pcor.ProcID(r), Thread: tokenThread}, tagDone, nil); err != nil {
				return fmt.Errorf("process 0: telling %d the ring is over: %w", r, err)
			}
		}
		return node.Directory().Leave(ctx)
	}
	if _, err := t.Recv(ctx, pcor.Addr{Proc: 0, Thread: tokenThread}, tagDone); err != nil {
		return fmt.Errorf("process %d: waiting for the end: %w", me, err)
	}
	select {
	case <-zeroGone:
	case <-ctx.Done():
		return fmt.Errorf("process %d: waiting for 0 to leave: %w", me, context.Cause(ctx))
	}
	return node.Directory().Leave(ctx)
}

func passToken(ctx context.Context, t *pcor.Thread, me, size, rounds int, delay time.Duration) error {
	next := pcor.Addr{Proc: pcor.ProcID((me + 1) % size), Thread: tokenThread}
	prev := pcor.Addr{Proc: pcor.ProcID((me + size - 1) % size), Thread: tokenThread}
	var buf [8]byte
	send := func(v uint64) error {
		if delay > 0 {
			time.Sleep(delay)
		}
		binary.LittleEndian.PutUint64(buf[:], v+1)
		if err := t.Send(ctx, next, tagToken, buf[:]); err != nil {
			return fmt.Errorf("process %d: send to %d: %w", me, next.Proc, err)
		}
		return nil
	}
	recv := func() (uint64, error) {
		m, err := t.Recv(ctx, prev, tagToken)
		if err != nil {
			return 0, fmt.Errorf("process %d: receive from %d: %w", me, prev.Proc, err)
		}
		if len(m.Data) != 8 {
			return 0, fmt.Errorf("process %d: token of %d bytes", me, len(m.Data))
		}
		return binary.LittleEndian.Uint64(m.Data), nil
	}
	start := time.Now()
	var v uint64
	for r := 0; r < rounds; r++ {
		var err error
		if me == 0 {
			if err = send(v); err == nil {
				v, err = recv()
			}
		} else if v, err = recv(); err == nil {
			err = send(v)
		}
		if err != nil {
			return err
		}
	}
	if me == 0 {
		if want := uint64(rounds * size); v != want {
			return fmt.Errorf("token counted %d hops, want %d", v, want)
		}
		el := time.Since(start)
		fmt.Printf("ring of %d: %d rounds, %d hops in %v (%v per hop)\n", size, rounds, v, el.Round(time.Microsecond), (el / time.Duration(max(v, 1))).Round(time.Microsecond))
	}
	return nil
}

// serve answers n visitors. A visitor says bye after reading the answer;
// only the bye proves the answer arrived, since the visitor may exit before
// acknowledging it.
func serve(ctx context.Context, t *pcor.Thread, n int) error {
	for i := 0; i < n; i++ {
		m, err := t.Recv(ctx, pcor.Any, tagVisit)
		if err != nil {
			return fmt.Errorf("waiting for visitor %d of %d: %w", i+1, n, err)
		}
		reply := t.Isend(m.Src, tagReply, fmt.Appendf(nil, "%s, from %d", m.Data, t.Addr().Proc))
		if _, err := t.Recv(ctx, m.Src, tagBye); err != nil {
			reply.Cancel()
			return fmt.Errorf("answering %v: %w", m.Src, err)
		}
		if done, _ := reply.Test(); !done {
			reply.Cancel()
		}
	}
	return nil
}

// visit greets every ring process and checks its answer.
func visit(ctx context.Context, node *pcor.Node, size int) error {
	t := node.NewThread()
	for r := 0; r < size; r++ {
		to := pcor.Addr{Proc: pcor.ProcID(r), Thread: serviceThread}
		hello := fmt.Sprintf("hello %d", r)
		if err := t.Send(ctx, to, tagVisit, []byte(hello)); err != nil {
			return fmt.Errorf("visitor: greeting %d: %w", r, err)
		}
		m, err := t.Recv(ctx, to, tagReply)
		if err != nil {
			return fmt.Errorf("visitor: answer of %d: %w", r, err)
		}
		if want := fmt.Sprintf("%s, from %d", hello, r); string(m.Data) != want {
			return fmt.Errorf("visitor: %d answered %q, want %q", r, m.Data, want)
		}
		if err := t.Send(ctx, to, tagBye, nil); err != nil {
			return fmt.Errorf("visitor: bye to %d: %w", r, err)
		}
		fmt.Printf("visitor %d exchanged with %d\n", node.Proc(), r)
	}
	return nil
}

// reportPorts writes the node's port counters to standard error: what a
// failed run sent, received and dropped.
func reportPorts(node *pcor.Node) {
	for _, s := range node.Stats() {
		fmt.Fprintf(os.Stderr, "port %s %s: frags sent %d received %d, acks sent %d received %d, retransmits %d, timeouts %d, drops %v\n",
			s.Fabric, s.Endpoint, s.FragsSent, s.FragsRecv, s.AcksSent, s.AcksRecv, s.Retransmits, s.Timeouts, s.Drops)
	}
}
