package pb

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/pcor"
)

// Handlers returns the far-side pcor jobs. With a shared node the jobs use
// its threads (the same-process placement); without, each job opens its own
// node of process job.Proc (default FarProc) that reaches process NearProc at job.Addr.
//
//   - "pcor-echo": thread 1 returns every message (up to job.Size bytes).
//   - "pcor-sink": thread 1 takes messages and answers each end marker with
//     a one-byte acknowledgement.
//   - "pcor-send": job.Threads senders; Go(n) makes each send n messages of
//     job.Size bytes to its receiver, with job.Window in flight.
func Handlers(shared *pcor.Node) peer.Handlers {
	mk := func(loop func(ctx context.Context, f *far) error, goFn func(ctx context.Context, f *far, n int) error) peer.Handler {
		return func(ctx context.Context, job peer.Job) (peer.Running, error) {
			return startFar(shared, job, loop, goFn)
		}
	}
	return peer.Handlers{
		"pcor-echo": mk(echoLoop, nil),
		"pcor-sink": mk(sinkLoop, nil),
		"pcor-send": mk(nil, sendStep),
	}
}

// far is a running far-side job.
type far struct {
	job    peer.Job
	node   *pcor.Node
	own    bool
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error
	goFn   func(ctx context.Context, f *far, n int) error
	// senders are the threads of a "pcor-send" job, kept from one round
	// to the next (see crew).
	senders *crew
}

func startFar(shared *pcor.Node, job peer.Job, loop func(context.Context, *far) error, goFn func(context.Context, *far, int) error) (*far, error) {
	if job.Size < 1 {
		return nil, fmt.Errorf("pb: %s: message size %d", job.Kind, job.Size)
	}
	f := &far{job: job, node: shared, goFn: goFn}
	if shared == nil {
		mode, err := ParseMode(job.Mode)
		if err != nil {
			return nil, err
		}
		proc := FarProc
		if job.Proc != 0 {
			proc = pcor.ProcID(job.Proc)
		}
		f.node, err = NewNode(proc, job.Fabric, mode, job.JobKey,
			pcor.Peer{Proc: NearProc, Fabric: job.Fabric, Addr: job.Addr})
		if err != nil {
			return nil, err
		}
		f.own = true
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	if loop != nil {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.err = loop(f.ctx, f)
		}()
	}
	return f, nil
}

func (f *far) Addr() string {
	ep := ""
	if f.own {
		ep = f.node.Endpoints()[0].Addr
	}
	return FormatAddr(f.node.Proc(), ep)
}

func (f *far) Go(ctx context.Context, n int) error {
	if f.goFn == nil {
		return nil
	}
	return f.goFn(ctx, f, n)
}

func (f *far) Stop() error {
	f.cancel()
	f.wg.Wait()
	f.senders.close()
	if f.own {
		f.node.Close()
	}
	if errors.Is(f.err, context.Canceled) || errors.Is(f.err, pcor.ErrClosed) {
		return nil
	}
	return f.err
}

// Counters are the progress counters of the job's node.
func (f *far) Counters() map[string]uint64 { return Counters(f.node) }

func (f *far) near(th pcor.ThreadID) pcor.Addr { return pcor.Addr{Proc: NearProc, Thread: th} }

func echoLoop(ctx context.Context, f *far) error {
	t := f.node.Thread(FarThread)
	buf := f.node.Alloc(f.job.Size)
	for {
		m, err := t.RecvInto(ctx, f.near(NearThread), TagData, buf)
		if err != nil {
			return err
		}
		if err := t.Send(ctx, m.Src, TagData, m.Data); err != nil {
			return err
		}
	}
}

// SinkDepth is the number of receives a stream's sink keeps posted, all
// into one buffer: the window, bounded as when each had a buffer of its
// own, to 64 MiB of buffers.
func SinkDepth(window, size int) int {
	depth := max(window, 1)
	if size > 0 {
		depth = min(depth, max(1, (64<<20)/size))
	}
	return depth
}

func sinkLoop(ctx context.Context, f *far) error {
	t := f.node.Thread(FarThread)
	ack := []byte{1}
	// Keep a window of receives posted ahead, so that messages land
	// straight in a buffer, and post them all into one buffer, as osu_bw
	// does (its window of MPI_Irecv shares r_buf): a stream's receiver
	// keeps the data of no message, and the baselines' receivers each
	// take every message into one place too (the raw UDP sink into the
	// port's slots, the TCP sink into one buffer, the channel's into one
	// slice). A buffer per receive made the receiver's copy write 64 MiB
	// of memory that no cache held (at 2 MiB, 32 buffers), where theirs
	// wrote a few MiB over and over.
	//
	// Under the race detector each receive has a buffer of its own: two
	// receives filling the shared one at once (the dispatcher completing
	// one while this thread posts the next and finds its message there)
	// are a race it reports, harmless here, where the bytes are never
	// read.
	depth := SinkDepth(f.job.Window, f.job.Size)
	ring := make([]*pcor.Request, depth)
	bufs := make([][]byte, depth)
	bufs[0] = f.node.Alloc(f.job.Size)
	for i := range bufs {
		if bufs[i] = bufs[0]; raceEnabled && i > 0 {
			bufs[i] = f.node.Alloc(f.job.Size)
		}
	}
	src := f.near(NearThread)
	for i := range ring {
		ring[i] = t.Irecv(src, TagData, bufs[i])
	}
	defer func() {
		for _, r := range ring {
			r.Cancel()
		}
	}()
	for i := 0; ; i = (i + 1) % depth {
		if err := ring[i].Wait(ctx); err != nil {
			return err
		}
		m := ring[i].Message()
		// The end marker is the empty message: its bytes would be
		// overwritten in the shared buffer by the next message's before
		// they were looked at.
		marker := len(m.Data) == 0
		// The completed receive is posted again: a stream's receiver
		// allocates no request per message.
		ring[i] = t.IrecvReuse(ring[i], src, TagData, bufs[i])
		if marker {
			if err := t.Send(ctx, m.Src, TagAck, ack); err != nil {
				return err
			}
		}
	}
}

// sendStep makes every sender send n messages to its receiver.
func sendStep(ctx context.Context, f *far, n int) error {
	N := f.job.Threads
	if N < 1 {
		return fmt.Errorf("pb: pcor-send: %d threads", N)
	}
	if !f.senders.ok() {
		f.senders.close()
		data := f.node.Alloc(f.job.Size)
		f.senders = newCrew(N, func(i int) func(ctx context.Context, k int) error {
			t := f.node.Thread(ContentionBase + pcor.ThreadID(N+i))
			dst := f.near(ContentionBase + pcor.ThreadID(i))
			// The window is the member's own from round to round: 1,000
			// senders making one each round allocated 0.5 MB a timed round.
			w := newWindow(max(f.job.Window, 1))
			return func(ctx context.Context, k int) error {
				return sendN(ctx, t, dst, data, k, w)
			}
		})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.senders.start(ctx, cancel, n)
	return f.senders.wait()
}

// sendN sends n messages of data to dst with at most w's capacity in
// flight; w is empty when it returns.
func sendN(ctx context.Context, t *pcor.Thread, dst pcor.Addr, data []byte, n int, w *window) error {
	for range n {
		if err := w.push(ctx, t.Isend(dst, TagData, data)); err != nil {
			w.cancel()
			return err
		}
	}
	return w.drain(ctx)
}

// window keeps up to cap requests in flight, oldest first.
type window struct {
	reqs       []*pcor.Request
	head, size int
}

func newWindow(n int) *window { return &window{reqs: make([]*pcor.Request, n)} }

func (w *window) push(ctx context.Context, r *pcor.Request) error {
	if w.size == len(w.reqs) {
		if err := w.pop(ctx); err != nil {
			r.Cancel()
			return err
		}
	}
	w.reqs[(w.head+w.size)%len(w.reqs)] = r
	w.size++
	return nil
}

func (w *window) pop(ctx context.Context) error {
	r := w.reqs[w.head]
	w.reqs[w.head] = nil
	w.head = (w.head + 1) % len(w.reqs)
	w.size--
	return r.Wait(ctx)
}

// cancel withdraws every request still in flight.
func (w *window) cancel() {
	for w.size > 0 {
		w.reqs[w.head].Cancel()
		w.reqs[w.head] = nil
		w.head = (w.head + 1) % len(w.reqs)
		w.size--
	}
}

func (w *window) drain(ctx context.Context) error {
	var first error
	for w.size > 0 {
		if err := w.pop(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}
