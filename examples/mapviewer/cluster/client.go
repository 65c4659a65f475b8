package cluster

import (
	"context"
	"errors"
	"fmt"
	"image"
	"slices"
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
// other tiles of a view included: it only catches a daemon that is alive
// and never answers. A daemon that dies is noticed much sooner: by the
// directory (a closed session counts at once, a silent one after its
// heartbeat timeout), which marks it down, or by the node when a request
// cannot be delivered. A live daemon on a busy machine may take long.
const DefaultTimeout = 2 * time.Minute

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
	sched   *scheduler

	// Strategy shares the tiles among the daemons holding them (default
	// VRPSS). Set it before the loader is used.
	Strategy Strategy

	// Logf, if set, reports daemons going down and coming back, and
	// RestartHint, if set, says how to start a daemon that went down
	// again. Set them before the loader is used.
	Logf        func(format string, args ...any)
	RestartHint func(pcor.ProcID) string

	mu    sync.Mutex
	state map[pcor.ProcID]*daemonState
}

// daemonState is what the loader knows of one daemon.
type daemonState struct {
	down   error // nil while up
	since  time.Time
	served int64
}

// DaemonStatus is one daemon as the loader sees it.
type DaemonStatus struct {
	Proc pcor.ProcID
	// Nodes are the node directories it serves.
	Nodes []int
	Up    bool
	// Reason says why it is down.
	Reason string
	// Since is when it last went down or came back (zero: up from the
	// start).
	Since time.Time
	// Served counts the fragments it delivered.
	Served int64
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
	l := &Loader{node: node, set: set, daemons: daemons, timeout: timeout,
		threads: make(chan *pcor.Thread, 1024), state: map[pcor.ProcID]*daemonState{}}
	for _, p := range daemons {
		l.state[p] = &daemonState{}
	}
	l.sched = newScheduler(daemons, l.isDown)
	return l, nil
}

// MarkDown records that process p is gone: requests waiting on it fail at
// once and later loads go to replicas.
func (l *Loader) MarkDown(p pcor.ProcID, reason error) { l.markDown(p, reason, true) }

// markDown is MarkDown, which logs the daemon down if report.
func (l *Loader) markDown(p pcor.ProcID, reason error, report bool) {
	l.mu.Lock()
	st, ok := l.state[p]
	if !ok || st.down != nil {
		l.mu.Unlock()
		return
	}
	st.down, st.since = reason, time.Now()
	l.mu.Unlock()
	l.sched.kick()
	l.node.RemovePeer(p, fmt.Errorf("%w: %v", pcor.ErrPeerDown, reason))
	if report {
		l.reportDown(p, reason)
	}
}

// reportDown logs that daemon p is down, if it still is.
func (l *Loader) reportDown(p pcor.ProcID, reason error) {
	l.mu.Lock()
	st := l.state[p]
	still := st != nil && st.down == reason
	l.mu.Unlock()
	if !still {
		return
	}
	l.logf("daemon %d is down: %v; the tiles of node directories %v come from their replicas", p, reason, l.nodesOf(p))
	if l.RestartHint != nil {
		l.logf("daemon %d: to start it again: %s", p, l.RestartHint(p))
	}
}

// MarkUp records that process p, marked down before, is back (a daemon
// restarted with its rank): loads go to it again.
func (l *Loader) MarkUp(p pcor.ProcID) {
	l.mu.Lock()
	st, ok := l.state[p]
	if !ok || st.down == nil {
		l.mu.Unlock()
		return
	}
	st.down, st.since = nil, time.Now()
	l.mu.Unlock()
	l.sched.kick()
	l.logf("daemon %d is back: it serves node directories %v again", p, l.nodesOf(p))
}

func (l *Loader) isDown(p pcor.ProcID) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st, ok := l.state[p]; ok {
		return st.down
	}
	return nil
}

func (l *Loader) served(p pcor.ProcID) {
	l.mu.Lock()
	l.state[p].served++
	l.mu.Unlock()
}

// Rates reports the tiles per second the scheduler measured of each
// daemon (0: none yet; only VRPSS measures).
func (l *Loader) Rates() map[pcor.ProcID]float64 { return l.sched.rates() }

// Daemons reports every daemon, in process order.
func (l *Loader) Daemons() []DaemonStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]DaemonStatus, 0, len(l.state))
	for p, st := range l.state {
		ds := DaemonStatus{Proc: p, Nodes: l.nodesOf(p), Up: st.down == nil, Since: st.since, Served: st.served}
		if st.down != nil {
			ds.Reason = st.down.Error()
		}
		out = append(out, ds)
	}
	slices.SortFunc(out, func(a, b DaemonStatus) int { return int(a.Proc) - int(b.Proc) })
	return out
}

// nodesOf lists the node directories daemon p serves.
func (l *Loader) nodesOf(p pcor.ProcID) []int {
	var out []int
	for k, d := range l.daemons {
		if d == p {
			out = append(out, k)
		}
	}
	return out
}

func (l *Loader) logf(format string, args ...any) {
	if l.Logf != nil {
		l.Logf(format, args...)
	}
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

// Load asks the daemons holding id for its fragment: with VRPSS the one
// the scheduler assigns first, with Primary the primary holder first; then
// the other live holders in order when one fails.
func (l *Loader) Load(ctx context.Context, id tiles.ID, scale int) (loader.Fragment, error) {
	if !l.set.Contains(id) || !l.set.ValidScale(scale) {
		return loader.Fragment{}, &tiles.TileError{Tile: id, Err: fmt.Errorf("%w: tile or scale 1:%d outside the set", tiles.ErrBadSet, scale)}
	}
	var holders []pcor.ProcID
	for _, k := range l.set.Holders(id) {
		if p := l.daemons[k]; !slices.Contains(holders, p) {
			holders = append(holders, p)
		}
	}
	assigned := noDaemon
	if l.Strategy == VRPSS {
		j := l.sched.submit(holders)
		select {
		case assigned = <-j.assign:
		case <-ctx.Done():
			if l.sched.withdraw(j) {
				return loader.Fragment{}, fmt.Errorf("tile %s %s: %w", id.Name(), id, ctx.Err())
			}
			assigned = <-j.assign
		}
		if i := slices.Index(holders, assigned); i > 0 {
			holders = append([]pcor.ProcID{assigned}, slices.Delete(slices.Clone(holders), i, i+1)...)
		}
	}
	th := l.thread()
	defer l.release(th)
	var errs []error
	var tileErr error
	for _, proc := range holders {
		if reason := l.isDown(proc); reason != nil {
			errs = append(errs, fmt.Errorf("daemon %d: %v", proc, reason))
		} else {
			img, err := l.fetch(ctx, th, proc, id, scale)
			if err == nil {
				l.served(proc)
				if proc == assigned {
					l.sched.delivered(proc)
				}
				return loader.Fragment{Img: img, Source: fmt.Sprintf("daemon %d", proc)}, nil
			}
			var te *tiles.TileError
			if errors.As(err, &te) && tileErr == nil {
				tileErr = err
			}
			errs = append(errs, err)
		}
		if proc == assigned {
			l.sched.delivered(proc)
		}
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
	// The request is copied and queued: the reply says the daemon took
	// it. A blocking send would wait, polling, until the daemon's
	// dispatcher has read it, which on a daemon busy decoding takes
	// milliseconds of the viewer's CPU per tile.
	req := request{ID: rid, Col: id.Col, Row: id.Row, Scale: scale}.encode()
	if err := th.Isend(pcor.Addr{Proc: proc, Thread: RequestThread}, TagRequest, req).Wait(ctx); err != nil {
		rr.Cancel()
		return nil, fmt.Errorf("daemon %d: request %s: %w", proc, id.Name(), err)
	}
	for {
		if err := await(ctx, rr); err != nil {
			rr.Cancel()
			l.cancelRemote(th, proc, rid)
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

// cancelRemote tells daemon proc that th no longer waits for request
// rid, so that it drops the request if it has not decoded it yet. The
// cancel goes from the thread that sent the request, so it arrives after
// it. A daemon that does not hear it only works for nothing. The cancel
// is posted and not waited for: a send bounded in time was withdrawn
// when its time ran out before it left, which it did for most of a
// view's cancels when they all went at once to a daemon busy decoding
// (75 to 300 of 300 lost under the race detector at load 15-26), and the
// daemon then decoded the whole view for nobody.
func (l *Loader) cancelRemote(th *pcor.Thread, proc pcor.ProcID, rid uint32) {
	if l.isDown(proc) != nil {
		return
	}
	th.Isend(pcor.Addr{Proc: proc, Thread: CancelThread}, TagCancel, request{ID: rid}.encode())
}

// await waits for r until ctx ends, on r's Done channel: outside the
// port's progress, so that the viewer's goroutines waiting for tiles
// leave the port to its dispatcher goroutine, which hands each reply to
// its goroutine. Waiting with Wait, one of them drove the port, spinning
// on it for 100 µs at a time between sleeps, on the CPUs the daemons
// decode on; in a daemon (one processor) the driving goroutine held the
// processor its decoding goroutine needed.
func await(ctx context.Context, r *pcor.Request) error {
	select {
	case <-r.Done():
		_, err := r.Test()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
