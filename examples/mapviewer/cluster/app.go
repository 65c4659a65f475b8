package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/pcor"
)

// ViewerProc is the process id (rank) of the viewer; the daemons are
// ranks 1..size-1.
const ViewerProc pcor.ProcID = 0

// JoinTimeout bounds how long the viewer waits for every daemon to join,
// and a daemon for the viewer.
const JoinTimeout = 30 * time.Second

// UnreachableTimeout is the node setting of every process: how long a
// message may go unacknowledged before its destination counts as gone. A
// process that dies is seen sooner, by the directory (its session
// closes); this catches one that hangs. On a machine shared with much
// other work a live process can wait seconds for a CPU.
const UnreachableTimeout = 10 * time.Second

// Errors of the application's membership, testable with errors.Is.
var (
	// ErrMembership: the application does not have the shape the viewer
	// needs (size unknown, a rank missing, more daemons than node
	// directories, a daemon gone before all joined).
	ErrMembership = errors.New("cluster: bad application membership")
	// ErrViewerGone: the viewer left the application, so a daemon stops.
	ErrViewerGone = errors.New("cluster: the viewer left")
)

// Process is one process of a map viewer application joined through the
// directory: the viewer (rank 0), which loads tiles through the daemons,
// or a daemon (rank r >= 1), which serves node directories r-1, r-1+n,
// ... of the tile set for n = size-1 daemons.
type Process struct {
	Node *pcor.Node
	// Size is the number of processes in the application.
	Size int

	// Logf and RestartHint are given to the viewer's loader (set them
	// before Viewer).
	Logf        func(format string, args ...any)
	RestartHint func(pcor.ProcID) string

	mu         sync.Mutex
	loader     *Loader
	stopping   <-chan struct{}         // the viewer's context ending: a shutdown
	joinLost   context.CancelCauseFunc // set while the viewer waits
	viewerGone chan struct{}
	goneOnce   sync.Once
}

// JoinEnv joins the application the environment describes (PCOR_COORD,
// PCOR_RANK, PCOR_SIZE, PCOR_JOBKEY, as set by pcorrun).
//
// The process routes by its ports' own figures, which put the processes
// of one host in touch through shared memory, unless PCOR_PRICES asks
// for measured prices: a probe made while the machine is busy can price
// loopback UDP below shared memory, and each tile's request and reply
// then cross the kernel as 4 to 5 datagrams and an acknowledgement,
// against 2 datagrams and none through shared memory.
func JoinEnv(ctx context.Context) (*Process, error) {
	env, err := directory.FromEnv()
	if err != nil {
		return nil, err
	}
	p := newProcess(env.Size)
	cfg := pcor.JoinConfig{OnEvent: p.onEvent, Node: pcor.Config{UnreachableTimeout: UnreachableTimeout}}
	if os.Getenv(pcor.EnvPrices) == "" {
		cfg.PriceEvery = -1
	}
	n, err := pcor.FromEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p.Node = n
	return p, nil
}

// Join joins the application described by cfg (its OnEvent is replaced).
func Join(ctx context.Context, cfg pcor.JoinConfig) (*Process, error) {
	p := newProcess(cfg.Size)
	cfg.OnEvent = p.onEvent
	if cfg.Node.UnreachableTimeout == 0 {
		cfg.Node.UnreachableTimeout = UnreachableTimeout
	}
	n, err := pcor.Join(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p.Node = n
	return p, nil
}

func newProcess(size int) *Process {
	return &Process{Size: size, viewerGone: make(chan struct{})}
}

// Rank is this process's id in the application.
func (p *Process) Rank() pcor.ProcID { return p.Node.Proc() }

// Daemons is the number of daemons of the application.
func (p *Process) Daemons() int { return max(0, p.Size-1) }

// Close leaves the application: in order (the others see it leave with
// reason "left", which the viewer does not report as a failure when it
// is stopping itself), then closes the node.
func (p *Process) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	if dc := p.Node.Directory(); dc != nil { // nil once closed
		dc.Leave(ctx)
	}
	return p.Node.Close()
}

// leaveTimeout bounds how long Close waits for the directory to
// acknowledge that the process leaves.
const leaveTimeout = 2 * time.Second

// onEvent sees every membership change: a daemon that leaves is marked
// down in the loader (its tiles go to replicas or fail at once), one that
// joins again (restarted with its rank) is marked up, the viewer leaving
// stops the daemons.
func (p *Process) onEvent(ev directory.Event) {
	proc := pcor.ProcID(ev.Member.Proc)
	if ev.Kind == directory.Joined {
		p.mu.Lock()
		l := p.loader
		p.mu.Unlock()
		if l != nil && proc != ViewerProc {
			l.MarkUp(proc)
		}
		return
	}
	if ev.Kind != directory.Left {
		return
	}
	if proc == ViewerProc {
		p.goneOnce.Do(func() { close(p.viewerGone) })
		return
	}
	p.mu.Lock()
	l, lost, stopping := p.loader, p.joinLost, p.stopping
	p.mu.Unlock()
	if lost != nil {
		lost(fmt.Errorf("%w: daemon %d left before all %d processes joined (%s)", ErrMembership, proc, p.Size, ev.Reason))
	}
	if l == nil {
		return
	}
	reason := fmt.Errorf("daemon %d left the application (%s)", proc, ev.Reason)
	if isDone(stopping) {
		l.markDown(proc, reason, false) // stopped with the viewer
		return
	}
	if ev.Reason != directory.ReasonLeft {
		l.MarkDown(proc, reason)
		return
	}
	// A daemon that left in order may have been stopped with the viewer
	// (Ctrl-C reaches every process of the application at once): it is
	// down at once, and reported as down only if the viewer goes on.
	l.markDown(proc, reason, false)
	go func() {
		t := time.NewTimer(shutdownGrace)
		defer t.Stop()
		select {
		case <-stopping:
		case <-t.C:
			l.reportDown(proc, reason)
		}
	}()
}

// shutdownGrace is how long after a daemon left in order the viewer
// waits for its own stop before it reports the daemon down.
const shutdownGrace = time.Second

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Viewer waits until every daemon has joined (at most JoinTimeout) and
// returns the cluster loader for set: node directory k is served by
// daemon k%n+1 of the n daemons. Daemons that leave later are marked
// down in the loader. Only rank 0 may call it.
func (p *Process) Viewer(ctx context.Context, set tiles.Set, timeout time.Duration) (*Loader, error) {
	if p.Rank() != ViewerProc {
		return nil, fmt.Errorf("%w: rank %d is not the viewer", ErrMembership, p.Rank())
	}
	n := p.Daemons()
	if n < 1 {
		return nil, fmt.Errorf("%w: %d processes, so no daemon (is PCOR_SIZE set?)", ErrMembership, p.Size)
	}
	if n > set.Nodes {
		return nil, fmt.Errorf("%w: %d daemons for %d node directories", ErrMembership, n, set.Nodes)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wctx, stop := context.WithTimeout(wctx, JoinTimeout)
	defer stop()
	p.mu.Lock()
	p.joinLost = cancel
	p.mu.Unlock()
	err := p.Node.Directory().Wait(wctx, p.Size)
	p.mu.Lock()
	p.joinLost = nil
	p.mu.Unlock()
	if err != nil {
		if c := context.Cause(wctx); errors.Is(c, ErrMembership) {
			return nil, c
		}
		return nil, fmt.Errorf("cluster: waiting for %d daemons to join: %w", n, err)
	}
	owner := make([]pcor.ProcID, set.Nodes)
	for k := range owner {
		owner[k] = pcor.ProcID(k%n + 1)
	}
	l, err := NewLoader(p.Node, set, owner, timeout)
	if err != nil {
		return nil, err
	}
	l.Logf, l.RestartHint = p.Logf, p.RestartHint
	p.mu.Lock()
	p.loader, p.stopping = l, ctx.Done()
	p.mu.Unlock()
	// A daemon gone between the wait and now was not marked down.
	for r := 1; r <= n; r++ {
		if _, ok := p.Node.Directory().Lookup(uint32(r)); !ok {
			l.MarkDown(pcor.ProcID(r), fmt.Errorf("daemon %d left the application", r))
		}
	}
	return l, nil
}

// Owned is the node directories daemon rank serves among daemons daemons.
func Owned(set tiles.Set, rank pcor.ProcID, daemons int) []int {
	var owned []int
	if rank < 1 || daemons < 1 || int(rank) > daemons {
		return nil
	}
	for k := int(rank) - 1; k < set.Nodes; k += daemons {
		owned = append(owned, k)
	}
	return owned
}

// Serve runs this process as a daemon for set until ctx ends, the viewer
// leaves the application (returning nil) or the directory session is
// lost. It waits at most JoinTimeout for the viewer to join.
func (p *Process) Serve(ctx context.Context, set tiles.Set, workers int, logf func(string, ...any)) error {
	rank := p.Rank()
	owned := Owned(set, rank, p.Daemons())
	if rank == ViewerProc || len(owned) == 0 {
		return fmt.Errorf("%w: daemon rank %d of %d processes serves none of %d node directories", ErrMembership, rank, p.Size, set.Nodes)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	dir := p.Node.Directory()
	go func() {
		select {
		case <-p.viewerGone:
			cancel(ErrViewerGone)
		case <-dir.Done():
			cancel(fmt.Errorf("cluster: directory session ended: %w", dir.Err()))
		case <-ctx.Done():
		}
	}()
	if err := p.waitViewer(ctx); err != nil {
		return err
	}
	d := &Daemon{Node: p.Node, Set: set, Owned: owned, Workers: workers, Logf: logf}
	err := d.Serve(ctx)
	if c := context.Cause(ctx); err == nil && c != nil && !errors.Is(c, ErrViewerGone) && !errors.Is(c, context.Canceled) {
		return c
	}
	if errors.Is(err, pcor.ErrClosed) {
		return nil
	}
	return err
}

// waitViewer waits until the viewer is a member (or has come and gone).
func (p *Process) waitViewer(ctx context.Context) error {
	t := time.NewTimer(JoinTimeout)
	defer t.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, ok := p.Node.Directory().Lookup(uint32(ViewerProc)); ok {
			return nil
		}
		select {
		case <-tick.C:
		case <-t.C:
			return fmt.Errorf("%w: the viewer (rank 0) did not join within %v", ErrMembership, JoinTimeout)
		case <-ctx.Done():
			if c := context.Cause(ctx); errors.Is(c, ErrViewerGone) || errors.Is(c, context.Canceled) {
				return nil
			}
			return context.Cause(ctx)
		}
	}
}
