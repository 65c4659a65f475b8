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

// Serve receives requests on thread RequestThread until ctx ends or the
// node closes, loading and scaling tiles on Workers goroutines, each
// replying from its own thread. It returns nil when ctx ended.
func (d *Daemon) Serve(ctx context.Context) error {
	workers := d.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	rx := d.Node.Thread(RequestThread)
	jobs := make(chan pcor.Message, 4*workers)
	var wg sync.WaitGroup
	for range workers {
		th := d.Node.NewThread()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range jobs {
				d.handle(ctx, th, m)
			}
		}()
	}
	defer func() {
		close(jobs)
		wg.Wait()
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

func (d *Daemon) handle(ctx context.Context, th *pcor.Thread, m pcor.Message) {
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
	sctx, cancel := context.WithTimeout(ctx, ReplyTimeout)
	defer cancel()
	// A viewer that left needs no reply (it may leave while the
	// acknowledgement of one it did receive is under way).
	if err := th.Send(sctx, pcor.Addr{Proc: m.Src.Proc, Thread: m.Src.Thread}, TagReply, rep.encode()); err != nil && ctx.Err() == nil && !errors.Is(err, pcor.ErrPeerDown) {
		d.logf("daemon: reply to %v for %s: %v", m.Src, id.Name(), err)
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
