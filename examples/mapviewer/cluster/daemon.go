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
}

// reply is a reply under way: its send completes when the viewer has
// accepted it.
type sentReply struct {
	r    *pcor.Request
	dst  pcor.Addr
	tile string
}

// Serve receives requests on thread RequestThread until ctx ends or the
// node closes, loading and scaling tiles on Workers goroutines, each
// replying from its own thread. A worker does not wait for its reply to
// be acknowledged: it goes on to the next tile while one goroutine sees
// the replies complete. It returns nil when ctx ended.
func (d *Daemon) Serve(ctx context.Context) error {
	workers := d.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	rx := d.Node.Thread(RequestThread)
	jobs := make(chan pcor.Message, 4*workers)
	sent := make(chan sentReply, 8*workers)
	var wg, cwg sync.WaitGroup
	cwg.Add(1)
	go func() {
		defer cwg.Done()
		d.complete(ctx, sent)
	}()
	for range workers {
		th := d.Node.NewThread()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range jobs {
				d.handle(ctx, th, m, sent)
			}
		}()
	}
	defer func() {
		close(jobs)
		wg.Wait()
		close(sent)
		cwg.Wait()
	}()
	for {
		m, err := rx.Recv(ctx, pcor.Any, TagRequest)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("daemon: receive: %w", err)
		}
		select {
		case jobs <- m:
		case <-ctx.Done():
			return nil
		}
	}
}

func (d *Daemon) handle(ctx context.Context, th *pcor.Thread, m pcor.Message, sent chan<- sentReply) {
	req, err := decodeRequest(m.Data)
	if err != nil {
		d.logf("daemon: from %v: %v", m.Src, err)
		return // no id to answer to
	}
	rep := reply{ID: req.ID}
	id := tiles.ID{Col: req.Col, Row: req.Row}
	img, node, err := d.load(id, req.Scale)
	if err != nil {
		rep.Status, rep.Text = statusOf(err), err.Error()
		rep.Node = node
		d.logf("daemon: %v", err)
	} else {
		rep.W, rep.H, rep.Node, rep.Pix = img.Rect.Dx(), img.Rect.Dy(), node, img.Pix
	}
	dst := pcor.Addr{Proc: m.Src.Proc, Thread: m.Src.Thread}
	r := th.Isend(dst, TagReply, rep.encode())
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
		err := s.r.Wait(sctx)
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

// load reads id from the first owned node directory holding it.
func (d *Daemon) load(id tiles.ID, scale int) (*image.RGBA, int, error) {
	if !d.Set.Contains(id) {
		return nil, 0, &tiles.TileError{Tile: id, Err: fmt.Errorf("%w: not in the grid", tiles.ErrBadSet)}
	}
	var first error
	node := 0
	for _, k := range d.Set.Holders(id) {
		if !slices.Contains(d.Owned, k) {
			continue
		}
		img, err := d.Set.LoadScaled(id, k, scale)
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
