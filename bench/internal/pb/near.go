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

	// The receivers of contention rounds (see crew), for the job of
	// process recvFar, and the size of the messages of the round.
	recvers  *crew
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
	n.recvers.close()
	n.recvers = nil
	if n.Far.Proc != n.Node.Proc() {
		n.Node.RemovePeer(n.Far.Proc, nil)
	}
	return err
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
// from one round to the next while the job runs (see crew).
func (n *Near) Contention(ctx context.Context, host peer.Host, threads, perThread, size int) (raw.Sample, error) {
	if err := n.check(size); err != nil {
		return raw.Sample{}, err
	}
	if threads < 1 {
		return raw.Sample{}, fmt.Errorf("pb: contention: %d threads", threads)
	}
	if n.recvers.size() != threads || n.recvFar != n.Far.Proc || !n.recvers.ok() {
		n.recvers.close()
		n.recvers = newCrew(threads, n.receiver(threads))
		n.recvFar = n.Far.Proc
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n.recvSize = size
	start := time.Now()
	n.recvers.start(ctx, cancel, perThread)
	goErr := make(chan error, 1)
	go func() { goErr <- host.Go(ctx, perThread) }()
	err := n.recvers.wait()
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
		src := pcor.Addr{Proc: n.Far.Proc, Thread: ContentionBase + pcor.ThreadID(threads+i)}
		var buf []byte
		return func(ctx context.Context, k int) error {
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
