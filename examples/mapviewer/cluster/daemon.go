package cluster

import (
	"context"
	"errors"
	"fmt"
	"image"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/pcor"
)

// ReplyTimeout bounds how long a daemon tries to deliver one reply.
const ReplyTimeout = 10 * time.Second

// Daemon answers tile requests for the node directories it owns.
type Daemon struct {
	Node    *pcor.Node
	Set     tiles.Set
	Owned   []int // node directories served
	Workers int   // decodes at once (default GOMAXPROCS)
	// Logf, if set, reports requests that failed.
	Logf func(format string, args ...any)

	qOnce sync.Once
	q     *queue
}

// reply is a reply under way: its send completes when the viewer has
// accepted it.
type sentReply struct {
	r    *pcor.Request
	dst  pcor.Addr
	tile string
}

func (d *Daemon) queue() *queue {
	d.qOnce.Do(func() { d.q = newQueue() })
	return d.q
}

// Stats counts the requests the daemon received, decoded and dropped
// because the viewer cancelled them.
func (d *Daemon) Stats() DaemonStats { return d.queue().snapshot() }

// Serve receives requests on thread RequestThread and cancels on thread
// CancelThread until ctx ends or the node closes. Requests wait in a
// queue for Workers goroutines, which load and scale the tiles, each
// replying from its own thread; a cancelled request leaves the queue
// undecoded, and one cancelled while decoded is not answered. A worker
// does not wait for its reply to be acknowledged: it goes on to the next
// tile while one goroutine sees the replies complete. It returns nil when
// ctx ended.
func (d *Daemon) Serve(ctx context.Context) error {
	n := d.Workers
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	q := d.queue()
	rx, crx := d.Node.Thread(RequestThread), d.Node.Thread(CancelThread)
	sent := make(chan sentReply, 8*n)
	var wg, cwg sync.WaitGroup
	cwg.Add(2)
	go func() {
		defer cwg.Done()
		d.complete(ctx, sent)
	}()
	go func() {
		defer cwg.Done()
		d.cancels(ctx, crx, q)
	}()
	for range n {
		th := d.Node.NewThread()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, ok := q.pop()
				if !ok {
					return
				}
				d.handle(ctx, th, j, q, sent)
				// A new time slice for each tile: the runtime's monitor
				// preempts a goroutine that runs 10 ms on one slice, by a
				// signal, and then polls every 20 µs again for a while. A
				// one-processor daemon with a queue of tiles decodes them
				// back to back on one goroutine, so without this it was
				// preempted every 10 ms and its monitor never slowed down.
				runtime.Gosched()
			}
		}()
	}
	defer func() {
		q.close()
		wg.Wait()
		close(sent)
		cwg.Wait()
	}()
	for {
		m, err := recv(ctx, rx, TagRequest)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("daemon: receive: %w", err)
		}
		req, err := decodeRequest(m.Data)
		if err != nil {
			d.logf("daemon: from %v: %v", m.Src, err)
			continue // no id to answer to
		}
		if !q.push(&job{key: jobKey{m.Src, req.ID}, req: req}) {
			return nil
		}
	}
}

// recv receives a message with tag from any thread on th, waiting on
// the request's Done channel (await): the daemon's goroutines then never
// drive its port themselves, which on one processor kept the decoding
// goroutine from running while they spun on the port. A receive
// interrupted by ctx is withdrawn.
func recv(ctx context.Context, th *pcor.Thread, tag pcor.Tag) (pcor.Message, error) {
	r := th.Irecv(pcor.Any, tag, nil)
	if err := await(ctx, r); err != nil {
		r.Cancel()
		return pcor.Message{}, err
	}
	return r.Message(), nil
}

// cancels receives the viewer's cancels until ctx ends.
func (d *Daemon) cancels(ctx context.Context, th *pcor.Thread, q *queue) {
	for {
		m, err := recv(ctx, th, TagCancel)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, pcor.ErrClosed) {
				d.logf("daemon: receive cancel: %v", err)
				continue
			}
			return
		}
		req, err := decodeRequest(m.Data)
		if err != nil {
			d.logf("daemon: cancel from %v: %v", m.Src, err)
			continue
		}
		q.cancel(jobKey{m.Src, req.ID})
	}
}

func (d *Daemon) handle(ctx context.Context, th *pcor.Thread, j *job, q *queue, sent chan<- sentReply) {
	req := j.req
	rep := reply{ID: req.ID}
	id := tiles.ID{Col: req.Col, Row: req.Row}
	// The tile is reduced straight into the reply, after its header.
	var buf []byte
	if d.Set.ValidScale(req.Scale) {
		buf = make([]byte, headerLen+(d.Set.TileW/req.Scale)*(d.Set.TileH/req.Scale)*4)
	}
	img, node, err := d.load(id, req.Scale, buf[min(len(buf), headerLen):])
	if q.done(j) {
		return // cancelled while decoded: nobody waits for it
	}
	if err != nil {
		rep.Status, rep.Text = statusOf(err), err.Error()
		rep.Node = node
		d.logf("daemon: %v", err)
	} else {
		rep.W, rep.H, rep.Node, rep.Pix = img.Rect.Dx(), img.Rect.Dy(), node, img.Pix
	}
	dst := j.key.src
	r := th.Isend(dst, TagReply, rep.encodeTo(buf))
	select {
	case sent <- sentReply{r, dst, id.Name()}:
	case <-ctx.Done():
		r.Cancel()
	}
}

// complete waits for each reply in turn (at most ReplyTimeout) and
// reports those that failed.
func (d *Daemon) complete(ctx context.Context, sent <-chan sentReply) {
	for s := range sent {
		sctx, cancel := context.WithTimeout(ctx, ReplyTimeout)
		err := await(sctx, s.r)
		cancel()
		if err == nil {
			continue
		}
		s.r.Cancel()
		// A viewer that left needs no reply (it may leave while the
		// acknowledgement of one it did receive is under way).
		if ctx.Err() == nil && !errors.Is(err, pcor.ErrPeerDown) {
			d.logf("daemon: reply to %v for %s: %v", s.dst, s.tile, err)
		}
	}
}

// load reads id from the first owned node directory holding it, into pix
// if it holds the pixels.
func (d *Daemon) load(id tiles.ID, scale int, pix []byte) (*image.RGBA, int, error) {
	if !d.Set.Contains(id) {
		return nil, 0, &tiles.TileError{Tile: id, Err: fmt.Errorf("%w: not in the grid", tiles.ErrBadSet)}
	}
	var first error
	node := 0
	for _, k := range d.Set.Holders(id) {
		if !slices.Contains(d.Owned, k) {
			continue
		}
		img, err := d.Set.LoadScaledToYielding(id, k, scale, pix)
		if err == nil {
			return img, k, nil
		}
		if first == nil {
			first, node = err, k
		}
	}
	if first == nil {
		first = &tiles.TileError{Tile: id, Err: fmt.Errorf("%w: not on node directories %v", tiles.ErrMissing, d.Owned)}
	}
	return nil, node, first
}

func (d *Daemon) logf(format string, args ...any) {
	if d.Logf != nil {
		d.Logf(format, args...)
	}
}
