package pcor

import (
	"context"
	"fmt"
	"time"

	"github.com/pcor-go/pcor/internal/engine"
)

// Thread is a communication endpoint owned by a goroutine.
type Thread struct {
	node *Node
	ep   *engine.Endpoint
	err  error // an endpoint that cannot be (Thread(AnyThread)): every operation fails with it
}

// Request is a pending non-blocking send or receive.
type Request struct {
	r *engine.Request
}

// refused returns a request done with err, posted nowhere.
func refused(err error) *Request { return &Request{r: engine.FailedRequest(err)} }

// badSend reports why a send cannot be made: this endpoint cannot be,
// the destination is a wildcard, or the tag is negative.
func (t *Thread) badSend(dst Addr, tag Tag) error {
	switch {
	case t.err != nil:
		return t.err
	case dst.Proc == AnyProc || dst.Thread == AnyThread:
		return fmt.Errorf("%w: send to %v: a destination is one thread of one process (Any, AnyProc and AnyThread match senders in receives)", ErrInvalid, dst)
	case tag < 0:
		return fmt.Errorf("%w: send with tag %d: a message's tag is 0 or more (AnyTag matches every tag in receives)", ErrInvalid, tag)
	}
	return nil
}

// badRecv reports why a receive or probe cannot be made: this endpoint
// cannot be, or the tag is negative and not AnyTag.
func (t *Thread) badRecv(tag Tag) error {
	switch {
	case t.err != nil:
		return t.err
	case tag < 0 && tag != AnyTag:
		return fmt.Errorf("%w: receive with tag %d: a tag is 0 or more, or AnyTag", ErrInvalid, tag)
	}
	return nil
}

// Message is a received message.
type Message struct {
	// Data is the message's bytes: the receive's buffer trimmed to the
	// message's length, or a buffer the library allocated. It is never
	// nil for a message received: a message of no bytes, sent as nil or
	// as an empty slice (the same message: only its length travels),
	// arrives as an empty slice.
	Data []byte
	// Src is the thread that sent it.
	Src Addr
	// Tag is the tag it was sent with.
	Tag Tag
}

// Status describes a message found by a probe.
type Status struct {
	// Src is the thread that sent the message.
	Src Addr
	// Tag is the tag it was sent with.
	Tag Tag
	// Len is its length in bytes.
	Len int
}

// Addr is this thread's address. That of the endpoint Node.Thread returns
// for AnyThread, which refuses every operation, holds the wildcard (its
// String is "<p,*>"): it names no thread and matches any as a receive's
// source.
func (t *Thread) Addr() Addr { return Addr{t.node.Proc(), ThreadID(t.ep.ID())} }

// Node is the thread's node.
func (t *Thread) Node() *Node { return t.node }

// Isend starts sending data to dst with tag. data must not be modified
// until the request completes.
//
// A small message (at most EagerLimit bytes) to a thread of another
// process completes as soon as it is copied into the send queue: Isend
// returns a request already done, data may be reused at once, and the
// copy is kept until the destination acknowledges it, retransmitted from
// if need be. This holds while the copies awaiting their acknowledgement
// take less than 16 MiB of the process's memory, all destinations
// together (each counting its size rounded up to a power of two, plus 384
// bytes for its request: about 1,000 copies of EagerLimit bytes, 37,000 of
// 64 B); beyond that Isend does not copy, and its request completes once
// the destination accepted the message, so that a sender faster than its
// receiver is slowed down by its Waits and its copies stay bounded. Isend
// never blocks. How a copied message fails:
//   - a failure known when Isend is called (the destination process is
//     down or unreachable, the node closed) completes the request with
//     that error;
//   - a delivery that fails later (the destination found dead or
//     unreachable while the copy waited for its acknowledgement) is
//     reported by the next send to that process, which fails with the
//     same error (ErrPeerDown, ErrUnreachable);
//   - Close gives copies still unacknowledged a short while (at most 2 s)
//     to be acknowledged before failing them.
//
// Over shared memory or RDMA, a copy of at most 1 KiB made while the
// destination has not yet taken what was sent to it may wait in the queue
// to leave with the next messages in one bundle: it leaves with the next
// send, receive or Wait of this process, at Close, or after 50 µs (up to
// about a millisecond in a process with nothing else to run).
//
// A program that must know each message accepted uses Ssend (or Send).
// A small message to a thread of the same process is accepted at once
// (copied into the receive posted for it, or kept as unexpected) while
// the node has room for it, and its request is then done when Isend
// returns, as for a copied message; otherwise, and for larger messages,
// the request completes once the message is accepted.
func (t *Thread) Isend(dst Addr, tag Tag, data []byte) *Request {
	if err := t.badSend(dst, tag); err != nil {
		return refused(err)
	}
	r := t.ep.IsendCopy(engine.ProcID(dst.Proc), engine.ThreadID(dst.Thread), engine.Tag(tag), data)
	if r.Copied() {
		return copiedRequest
	}
	return &Request{r: r}
}

// copiedRequest is the request of every message Isend copied: a send done
// without error, shared so that a copied send allocates nothing.
var copiedRequest = &Request{r: engine.CopiedSend()}

// EagerLimit (16 KiB) is the largest message Isend copies.
const EagerLimit = engine.EagerLimit

// Send sends data to dst with tag and returns once the destination process
// has accepted the whole message (the same as Ssend). If ctx ends first
// the send is cancelled and Send returns ctx's error (or the send's outcome,
// when it completed meanwhile). A large message the destination reads
// straight from this process's memory (see Request.Cancel) is withdrawn
// from the destination first: Send returns once the destination answered,
// within a round trip, unless a receive there had already taken the
// message, when Send returns nil once it has been read.
func (t *Thread) Send(ctx context.Context, dst Addr, tag Tag, data []byte) error {
	return t.send(ctx, dst, tag, data)
}

// Ssend sends data to dst with tag and returns once the destination
// process has accepted the whole message (MPI's synchronous send). The
// destination acknowledges it at once, or, where data from it to this
// process usually follows soon (a reply), with that data, and alone after
// at most a fraction of a millisecond if none comes. Failures are reported
// by Ssend itself. If ctx ends first the send is cancelled, as for Send.
func (t *Thread) Ssend(ctx context.Context, dst Addr, tag Tag, data []byte) error {
	return t.send(ctx, dst, tag, data)
}

// send is a blocking send; on a node that measures its links, every
// passiveEvery-th one of at most EagerLimit bytes to another process is
// timed as a passive sample.
func (t *Thread) send(ctx context.Context, dst Addr, tag Tag, data []byte) error {
	if err := t.badSend(dst, tag); err != nil {
		return err
	}
	if !t.node.passive || len(data) > engine.EagerLimit || dst.Proc == t.node.Proc() ||
		t.node.sends.Add(1)%passiveEvery != 0 {
		return apiError(t.ep.Send(ctx, engine.ProcID(dst.Proc), engine.ThreadID(dst.Thread), engine.Tag(tag), data))
	}
	t0 := time.Now()
	err := t.ep.Send(ctx, engine.ProcID(dst.Proc), engine.ThreadID(dst.Thread), engine.Tag(tag), data)
	if err == nil {
		t.node.observeSend(dst.Proc, len(data), time.Since(t0))
	}
	return apiError(err)
}

// Irecv starts receiving a message from src (wildcards allowed) with tag
// (or AnyTag) into buf; with a nil buf the library allocates.
func (t *Thread) Irecv(src Addr, tag Tag, buf []byte) *Request {
	if err := t.badRecv(tag); err != nil {
		return refused(err)
	}
	return &Request{r: t.ep.Irecv(engine.ProcID(src.Proc), engine.ThreadID(src.Thread), engine.Tag(tag), buf)}
}

// IrecvReuse is Irecv that reuses r, a receive request of this node that
// has completed (returned by Irecv or IrecvReuse, its Wait or Test
// reported it done), and returns it posted again: a thread that keeps
// receives posted, as a stream's receiver does, then allocates nothing per
// message. r's last message is forgotten (take what Message returned
// before). A nil r, a send's request, or one not yet completed is left
// alone and IrecvReuse returns a new request, as Irecv.
func (t *Thread) IrecvReuse(r *Request, src Addr, tag Tag, buf []byte) *Request {
	if r == nil {
		return t.Irecv(src, tag, buf)
	}
	if err := t.badRecv(tag); err != nil {
		return refused(err)
	}
	er := t.ep.IrecvReuse(r.r, engine.ProcID(src.Proc), engine.ThreadID(src.Thread), engine.Tag(tag), buf)
	if er != r.r {
		return &Request{r: er}
	}
	return r
}

// Recv receives a message from src (wildcards allowed) with tag (or
// AnyTag). If ctx ends first the receive is withdrawn and Recv returns
// ctx's error (or the message, when it arrived meanwhile).
func (t *Thread) Recv(ctx context.Context, src Addr, tag Tag) (Message, error) {
	return t.RecvInto(ctx, src, tag, nil)
}

// RecvInto is Recv into buf (for example from Node.Alloc); the message
// data is buf trimmed to the message length. A longer message fills buf and
// reports ErrTruncated.
func (t *Thread) RecvInto(ctx context.Context, src Addr, tag Tag, buf []byte) (Message, error) {
	if err := t.badRecv(tag); err != nil {
		return Message{}, err
	}
	r, err := t.ep.Recv(ctx, engine.ProcID(src.Proc), engine.ThreadID(src.Thread), engine.Tag(tag), buf)
	if r == nil {
		return Message{}, apiError(err)
	}
	return message(r), apiError(err)
}

func message(r *engine.Request) Message {
	p, th := r.Source()
	return Message{Data: r.Data(), Src: Addr{ProcID(p), ThreadID(th)}, Tag: Tag(r.Tag())}
}

// Iprobe reports whether a message matching src and tag is waiting.
func (t *Thread) Iprobe(src Addr, tag Tag) (Status, bool) {
	if t.badRecv(tag) != nil {
		return Status{}, false
	}
	st, ok := t.ep.Iprobe(engine.ProcID(src.Proc), engine.ThreadID(src.Thread), engine.Tag(tag))
	return status(st), ok
}

// Probe waits until a message matching src and tag is waiting, or until
// ctx ends (ctx's error).
func (t *Thread) Probe(ctx context.Context, src Addr, tag Tag) (Status, error) {
	if err := t.badRecv(tag); err != nil {
		return Status{}, err
	}
	st, err := t.ep.Probe(ctx, engine.ProcID(src.Proc), engine.ThreadID(src.Thread), engine.Tag(tag))
	return status(st), apiError(err)
}

func status(st engine.Status) Status {
	return Status{Addr{ProcID(st.SrcProc), ThreadID(st.SrcThread)}, Tag(st.Tag), st.Len}
}

// Test reports whether the request completed, and its error.
func (r *Request) Test() (bool, error) {
	done, err := r.r.Test()
	return done, apiError(err)
}

// Wait blocks until the request completes or ctx ends, when it returns
// ctx's error; ending ctx stops the wait only, the request goes on (see
// Cancel).
func (r *Request) Wait(ctx context.Context) error { return apiError(r.r.Wait(ctx)) }

// Done delivers one value when the request completes; then Test and Wait
// report its outcome. A goroutine that selects on Done waits outside the
// port's progress: Wait drives the port the message comes through, or,
// while another thread drives it, counts as one of the port's waiters,
// which keeps the port with its dispatcher goroutine (each message then
// costs a hand-over between threads). Done suits a request that may wait
// long and whose completion is not on a hurried path, such as a receive
// posted to learn that a peer went down. The request of a send Isend
// copied is done already: its Done channel is closed.
func (r *Request) Done() <-chan struct{} { return r.r.Done() }

// Cancel withdraws the request if it has not completed. Whatever a send's
// outcome (delivered, cancelled, its destination down, the node closed),
// it completes only once this process no longer reads its data: when Test
// or Wait report it done, the buffer may be reused. (A large message that
// a receiver reads from this process's memory over shared memory, failed
// by Close meanwhile, may still be read by that receiver.)
//
// A send of 256 KiB or more over shared memory (shm.Config.SingleCopyMin)
// to a process that reads it straight from this process's memory (single
// copy) is withdrawn from the destination once the destination was told of
// it: Cancel does not wait for the answer, and the request completes with
// ErrCanceled when the destination has dropped the message (a receive
// posted there later does not get it), or as sent, once read, when a
// receive there had already taken it; with an error when that process goes
// down or this node closes meanwhile. A cancelled request completes with
// ErrCanceled.
func (r *Request) Cancel() { r.r.Cancel() }

// Message is the received message once a receive completed.
func (r *Request) Message() Message { return message(r.r) }
