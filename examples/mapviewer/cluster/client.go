package cluster

import (
	"context"
	"errors"
	"fmt"
	"image"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/pcor"
)

// ErrUnavailable reports that no daemon holding a tile answered.
var ErrUnavailable = errors.New("no daemon holding the tile answered")

// DefaultTimeout bounds one request to one daemon, queueing behind the
// other tiles of a view included. A daemon that dies is noticed sooner:
// by its launcher (Start marks it down as soon as the process exits) or
// by the node when a request cannot be delivered.
const DefaultTimeout = 30 * time.Second

// Loader is the cluster loader: it implements loader.Loader by asking the
// daemon serving each tile's node directory, from one pcor thread per
// concurrent Load, trying the replicas in order when a daemon fails.
type Loader struct {
	node    *pcor.Node
	set     tiles.Set
	daemons []pcor.ProcID // daemons[k] serves node directory k
	timeout time.Duration

	threads chan *pcor.Thread // idle thread endpoints
	nextID  atomic.Uint32

	mu   sync.Mutex
	down map[pcor.ProcID]error
}

var _ loader.Loader = (*Loader)(nil)

// NewLoader makes a cluster loader on node for set, where daemons[k] is
// the process serving node directory k; timeout bounds each request
// (<= 0: DefaultTimeout).
func NewLoader(node *pcor.Node, set tiles.Set, daemons []pcor.ProcID, timeout time.Duration) (*Loader, error) {
	if len(daemons) != set.Nodes {
		return nil, fmt.Errorf("cluster: %d daemons for %d node directories", len(daemons), set.Nodes)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Loader{node: node, set: set, daemons: daemons, timeout: timeout,
		threads: make(chan *pcor.Thread, 1024), down: map[pcor.ProcID]error{}}, nil
}

// MarkDown records that process p is gone: requests waiting on it fail at
// once and later loads go to replicas.
func (l *Loader) MarkDown(p pcor.ProcID, reason error) {
	l.mu.Lock()
	if _, ok := l.down[p]; ok {
		l.mu.Unlock()
		return
	}
	l.down[p] = reason
	l.mu.Unlock()
	l.node.RemovePeer(p, fmt.Errorf("%w: %v", pcor.ErrPeerDown, reason))
}

func (l *Loader) isDown(p pcor.ProcID) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down[p]
}

func (l *Loader) thread() *pcor.Thread {
	select {
	case th := <-l.threads:
		return th
	default:
		return l.node.NewThread()
	}
}

func (l *Loader) release(th *pcor.Thread) {
	select {
	case l.threads <- th:
	default:
	}
}

// Load asks the daemons holding id, primary first, for its fragment.
func (l *Loader) Load(ctx context.Context, id tiles.ID, scale int) (loader.Fragment, error) {
	if !l.set.Contains(id) || !l.set.ValidScale(scale) {
		return loader.Fragment{}, &tiles.TileError{Tile: id, Err: fmt.Errorf("%w: tile or scale 1:%d outside the set", tiles.ErrBadSet, scale)}
	}
	th := l.thread()
	defer l.release(th)
	var errs []error
	var tileErr error
	for _, k := range l.set.Holders(id) {
		proc := l.daemons[k]
		if reason := l.isDown(proc); reason != nil {
			errs = append(errs, fmt.Errorf("daemon %d: %v", proc, reason))
			continue
		}
		img, err := l.fetch(ctx, th, proc, id, scale)
		if err == nil {
			return loader.Fragment{Img: img, Source: fmt.Sprintf("daemon %d", proc)}, nil
		}
		var te *tiles.TileError
		if errors.As(err, &te) && tileErr == nil {
			tileErr = err
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if tileErr != nil && len(errs) == 1 {
		return loader.Fragment{}, tileErr
	}
	return loader.Fragment{}, fmt.Errorf("tile %s %s: %w: %w", id.Name(), id, ErrUnavailable, errors.Join(errs...))
}

// fetch does one request/reply exchange with daemon proc.
func (l *Loader) fetch(ctx context.Context, th *pcor.Thread, proc pcor.ProcID, id tiles.ID, scale int) (*image.RGBA, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	rid := l.nextID.Add(1)
	src := pcor.Addr{Proc: proc, Thread: pcor.AnyThread}
	rr := th.Irecv(src, TagReply, nil)
	req := request{ID: rid, Col: id.Col, Row: id.Row, Scale: scale}.encode()
	if err := th.Send(ctx, pcor.Addr{Proc: proc, Thread: RequestThread}, TagRequest, req); err != nil {
		rr.Cancel()
		return nil, fmt.Errorf("daemon %d: request %s: %w", proc, id.Name(), err)
	}
	for {
		if err := rr.Wait(ctx); err != nil {
			rr.Cancel()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("daemon %d: no reply for %s within %v: %w", proc, id.Name(), l.timeout, err)
			}
			return nil, fmt.Errorf("daemon %d: reply for %s: %w", proc, id.Name(), err)
		}
		rep, err := decodeReply(rr.Message().Data)
		if err != nil {
			return nil, fmt.Errorf("daemon %d: %s: %w", proc, id.Name(), err)
		}
		if rep.ID != rid {
			// A late reply to an earlier request of this thread.
			rr = th.Irecv(src, TagReply, nil)
			continue
		}
		if rep.Status != statusOK {
			return nil, &tiles.TileError{Tile: id, Path: fmt.Sprintf("daemon %d node%02d", proc, rep.Node),
				Err: fmt.Errorf("%w: %s", errOf(rep.Status), rep.Text)}
		}
		if rep.W != l.set.TileW/scale || rep.H != l.set.TileH/scale {
			return nil, fmt.Errorf("daemon %d: %s: %w: %dx%d fragment at 1:%d", proc, id.Name(), ErrProtocol, rep.W, rep.H, scale)
		}
		return &image.RGBA{Pix: rep.Pix, Stride: rep.W * 4, Rect: image.Rect(0, 0, rep.W, rep.H)}, nil
	}
}
