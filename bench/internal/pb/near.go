package pb

import (
	"context"
	"fmt"
	"time"

	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/bench/internal/raw"
	"github.com/pcor-go/pcor/pcor"
)

// Near is the timing side: thread 0 of a node of process NearProc.
type Near struct {
	Node *pcor.Node
	T    *pcor.Thread
	Far  pcor.Addr // the far job's thread

	maxSize    int
	jobs       uint32
	send, recv []byte

	// The receivers of contention rounds (see crew), one crew per thread
	// count, and the process and the message size of the round. A crew
	// serves every sample of its count, whatever far job it is: it was
	// made anew for each sample, so that a timed round was the second its
	// threads ever ran, and they paid there what a thread pays once (the
	// engine's watch of a context a thread waits with twice, made at its
	// second wait: at 1,000 threads, 1,000 of them registered on one
	// context inside the timed round, against one for a single thread).
	crews    map[int]*crew
	recvFar  pcor.ProcID
	recvSize int
}

// NewNear prepares the near side on node for messages up to maxSize bytes
// (buffers from Node.Alloc).
func NewNear(node *pcor.Node, maxSize int) *Near {
	n := &Near{Node: node, T: node.Thread(NearThread), maxSize: maxSize}
	n.send = node.Alloc(maxSize)
	n.recv = node.Alloc(maxSize)
	for i := range n.send {
		n.send[i] = byte(i*7 + 3)
	}
	return n
}

// Connect starts job on host and points the near side at it: the far
// address is learnt from the job's answer and, for another process, added
// as a peer of the near node. Each job that opens its own node gets a
// process id never used before in this run (FarProc, FarProc+1, ...), so
// no state of an earlier far node is mistaken for the new one's.
func (n *Near) Connect(ctx context.Context, host peer.Host, job peer.Job) error {
	n.jobs++
	job.Proc = uint32(FarProc) + n.jobs - 1
	addr, err := host.Start(ctx, job)
	if err != nil {
		return err
	}
	proc, ep, err := ParseAddr(addr)
	if err != nil {
		host.Stop(ctx)
		return err
	}
	if proc != n.Node.Proc() {
		if err := n.Node.AddPeer(pcor.Peer{Proc: proc, Fabric: job.Fabric, Addr: ep}); err != nil {
			host.Stop(ctx)
			return err
		}
	}
	n.Far = pcor.Addr{Proc: proc, Thread: FarThread}
	return nil
}

// Disconnect stops the far job and forgets its process.
func (n *Near) Disconnect(ctx context.Context, host peer.Host) error {
	err := host.Stop(ctx)
	if n.Far.Proc != n.Node.Proc() {
		n.Node.RemovePeer(n.Far.Proc, nil)
	}
	return err
}

// Close ends the receivers kept for contention rounds.
func (n *Near) Close() {
	for k, c := range n.crews {
		c.close()
		delete(n.crews, k)
	}
}

func (n *Near) check(size int) error {
	if size < 1 || size > n.maxSize {
		return fmt.Errorf("pb: message size %d outside 1..%d", size, n.maxSize)
	}
	return nil
}

// RoundTrip times iters round trips of size bytes to an echo job, after
// warmup untimed ones, in microseconds each.
func (n *Near) RoundTrip(ctx context.Context, size, warmup, iters int) ([]float64, error) {
	if err := n.check(size); err != nil {
		return nil, err
	}
	out := make([]float64, 0, iters)
	for i := 0; i < warmup+iters; i++ {
		t0 := time.Now()
		if err := n.T.Send(ctx, n.Far, TagData, n.send[:size]); err != nil {
			return nil, err
		}
		m, err := n.T.RecvInto(ctx, n.Far, TagData, n.recv)
		if err != nil {
			return nil, err
		}
		if len(m.Data) != size {
			return nil, fmt.Errorf("pb: echo returned %d bytes of %d", len(m.Data), size)
		}
		if i >= warmup {
			out = append(out, float64(time.Since(t0).Nanoseconds())/1e3)
		}
	}
	return out, nil
}

// Stream sends size-byte messages to a sink job with window in flight for
// dur, then an end marker, and times until the sink's acknowledgement.
func (n *Near) Stream(ctx context.Context, size, window int, dur time.Duration) (raw.Sample, error) {
	if err := n.check(size); err != nil {
		return raw.Sample{}, err
	}
	w := newWindow(max(window, 1))
	start := time.Now()
	var sent int64
	for i := 0; ; i++ {
		if i%16 == 0 && (time.Since(start) >= dur || ctx.Err() != nil) {
			break
		}
		if err := w.push(ctx, n.T.Isend(n.Far, TagData, n.send[:size])); err != nil {
			w.cancel()
			return raw.Sample{}, err
		}
		sent++
	}
	if err := w.drain(ctx); err != nil {
		return raw.Sample{}, err
	}
	// The end marker is an empty message (the sink tells it by its
	// length), counted neither in the bytes nor in the messages, as the
	// raw UDP stream's marker datagram.
	if err := n.T.Send(ctx, n.Far, TagData, nil); err != nil {
		return raw.Sample{}, err
	}
	if _, err := n.T.RecvInto(ctx, n.Far, TagAck, n.recv); err != nil {
		return raw.Sample{}, err
	}
	return raw.Sample{Bytes: sent * int64(size), Messages: sent, Elapsed: time.Since(start)}, nil
}

// Contention runs one round of a "pcor-send" job of threads senders already
// started on host: threads receivers each take perThread messages of size
// bytes from their own sender, all at once. The time runs from the start
// order to the last message received. The receiving goroutines are kept
// for every round of their thread count, from one far job to the next
// (see crew and Near.crews), until Close.
func (n *Near) Contention(ctx context.Context, host peer.Host, threads, perThread, size int) (raw.Sample, error) {
	if err := n.check(size); err != nil {
		return raw.Sample{}, err
	}
	if threads < 1 {
		return raw.Sample{}, fmt.Errorf("pb: contention: %d threads", threads)
	}
	c := n.crews[threads]
	if !c.ok() {
		c.close()
		c = newCrew(threads, n.receiver(threads))
		if n.crews == nil {
			n.crews = make(map[int]*crew)
		}
		n.crews[threads] = c
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n.recvFar, n.recvSize = n.Far.Proc, size
	start := time.Now()
	c.start(ctx, cancel, perThread)
	goErr := make(chan error, 1)
	go func() { goErr <- host.Go(ctx, perThread) }()
	err := c.wait()
	el := time.Since(start)
	if gerr := <-goErr; gerr != nil {
		return raw.Sample{}, gerr
	}
	if err != nil {
		return raw.Sample{}, err
	}
	total := int64(threads) * int64(perThread)
	return raw.Sample{Bytes: total * int64(size), Messages: total, Elapsed: el}, nil
}

// receiver makes the work of receiver i of threads: k messages of
// n.recvSize bytes from its sender.
func (n *Near) receiver(threads int) func(i int) func(ctx context.Context, k int) error {
	return func(i int) func(ctx context.Context, k int) error {
		t := n.Node.Thread(ContentionBase + pcor.ThreadID(i))
		var buf []byte
		return func(ctx context.Context, k int) error {
			src := pcor.Addr{Proc: n.recvFar, Thread: ContentionBase + pcor.ThreadID(threads+i)}
			size := n.recvSize
			if len(buf) != size {
				buf = make([]byte, size)
			}
			for range k {
				m, err := t.RecvInto(ctx, src, TagData, buf)
				if err != nil {
					return err
				}
				if len(m.Data) != size {
					return fmt.Errorf("pb: received %d bytes of %d", len(m.Data), size)
				}
			}
			return nil
		}
	}
}
