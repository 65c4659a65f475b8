package cluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/pcor"
)

// ViewerProc is the process id of the viewer; daemons are 1..n.
const ViewerProc pcor.ProcID = 0

// StartTimeout bounds how long a daemon may take to report ready.
const StartTimeout = 15 * time.Second

// Options configure Start.
type Options struct {
	Daemons int           // daemon processes (default: one per node directory)
	Timeout time.Duration // per request (default DefaultTimeout)
	// UnreachableTimeout of the viewer's node (default 2 s).
	UnreachableTimeout time.Duration
}

// Command makes the command that runs a daemon with the given arguments
// (for the mapviewer program: itself with "daemon" and args).
type Command func(args []string) *exec.Cmd

// Cluster is a viewer node wired to daemon processes it started.
type Cluster struct {
	Node    *pcor.Node
	Loader  *Loader
	Daemons []*Proc

	closeOnce sync.Once
}

// Proc is one daemon process.
type Proc struct {
	ID    pcor.ProcID
	Owned []int
	Cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	err   error
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Start opens the viewer's node and starts the daemons: daemon i (process
// i+1) owns the node directories k with k % daemons == i. A daemon that
// exits is marked down at once, so views fail over to replicas or fail
// naming the tiles instead of waiting.
func Start(ctx context.Context, set tiles.Set, cmd Command, o Options) (*Cluster, error) {
	if o.Daemons <= 0 {
		o.Daemons = set.Nodes
	}
	if o.Daemons > set.Nodes {
		return nil, fmt.Errorf("cluster: %d daemons for %d node directories", o.Daemons, set.Nodes)
	}
	if o.UnreachableTimeout <= 0 {
		o.UnreachableTimeout = 2 * time.Second
	}
	var kb [8]byte
	rand.Read(kb[:])
	job := binary.LittleEndian.Uint64(kb[:])
	node, err := pcor.NewNode(pcor.Config{Proc: ViewerProc, JobKey: job, UnreachableTimeout: o.UnreachableTimeout})
	if err != nil {
		return nil, err
	}
	owner := make([]pcor.ProcID, set.Nodes)
	for k := range owner {
		owner[k] = pcor.ProcID(k%o.Daemons + 1)
	}
	l, err := NewLoader(node, set, owner, o.Timeout)
	if err != nil {
		node.Close()
		return nil, err
	}
	c := &Cluster{Node: node, Loader: l}
	viewerAddr := node.Endpoints()[0].Addr
	for i := range o.Daemons {
		p := &Proc{ID: pcor.ProcID(i + 1), done: make(chan struct{})}
		for k := i; k < set.Nodes; k += o.Daemons {
			p.Owned = append(p.Owned, k)
		}
		if err := c.startDaemon(ctx, set, cmd, p, job, viewerAddr); err != nil {
			c.Close()
			return nil, err
		}
		c.Daemons = append(c.Daemons, p)
	}
	return c, nil
}

func (c *Cluster) startDaemon(ctx context.Context, set tiles.Set, cmd Command, p *Proc, job uint64, viewer string) error {
	owned := make([]string, len(p.Owned))
	for i, k := range p.Owned {
		owned[i] = strconv.Itoa(k)
	}
	p.Cmd = cmd([]string{"--set", set.Dir, "--own", strings.Join(owned, ","), "--proc", strconv.Itoa(int(p.ID)),
		"--job", strconv.FormatUint(job, 16), "--viewer", fmt.Sprintf("%d=%s", ViewerProc, viewer)})
	var err error
	if p.stdin, err = p.Cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := p.Cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := p.Cmd.Start(); err != nil {
		return fmt.Errorf("cluster: start daemon %d: %w", p.ID, err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			ready <- sc.Text()
		}
		close(ready)
		io.Copy(io.Discard, out)
	}()
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
		c.Loader.MarkDown(p.ID, fmt.Errorf("daemon process %d exited (%v)", p.ID, p.err))
	}()
	t := time.NewTimer(StartTimeout)
	defer t.Stop()
	select {
	case line, ok := <-ready:
		addr, found := strings.CutPrefix(line, "ready ")
		if !ok || !found {
			p.Cmd.Process.Kill()
			return fmt.Errorf("cluster: daemon %d did not start: %q", p.ID, line)
		}
		return c.Node.AddPeer(pcor.Peer{Proc: p.ID, Addr: addr})
	case <-t.C:
		p.Cmd.Process.Kill()
		return fmt.Errorf("cluster: daemon %d not ready after %v", p.ID, StartTimeout)
	case <-ctx.Done():
		p.Cmd.Process.Kill()
		return ctx.Err()
	}
}

// Close stops the daemons (closing their standard input, then killing
// those still running after a second) and closes the node.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		for _, p := range c.Daemons {
			p.stdin.Close()
		}
		t := time.NewTimer(time.Second)
		defer t.Stop()
		for _, p := range c.Daemons {
			select {
			case <-p.done:
			case <-t.C:
				p.Cmd.Process.Kill()
				<-p.done
			}
		}
		c.Node.Close()
	})
	return nil
}

// DaemonMain runs a daemon from command-line arguments: it opens its node,
// prints "ready <address>" on stdout and serves until ctx ends or stdin
// reaches end of file (its launcher went away).
func DaemonMain(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet(stderr)
	setDir := fs.String("set", "", "tile set directory")
	own := fs.String("own", "", "node directories served, comma separated (default: all)")
	proc := fs.Uint("proc", 1, "this daemon's process id")
	job := fs.String("job", "", "job key (hex)")
	viewer := fs.String("viewer", "", "viewer process as id=address")
	listen := fs.String("listen", "127.0.0.1:0", "UDP address to listen on")
	workers := fs.Int("workers", 0, "decodes at once (default GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	set, err := tiles.Open(*setDir)
	if err != nil {
		return err
	}
	var owned []int
	if *own == "" {
		for k := range set.Nodes {
			owned = append(owned, k)
		}
	} else {
		for _, f := range strings.Split(*own, ",") {
			k, err := strconv.Atoi(f)
			if err != nil || k < 0 || k >= set.Nodes {
				return fmt.Errorf("daemon: bad node directory %q (set has %d)", f, set.Nodes)
			}
			owned = append(owned, k)
		}
	}
	key, err := strconv.ParseUint(*job, 16, 64)
	if err != nil {
		return fmt.Errorf("daemon: bad --job %q: %w", *job, err)
	}
	cfg := pcor.Config{Proc: pcor.ProcID(*proc), JobKey: key, Listen: []pcor.Listen{{Addr: *listen}}}
	if *viewer != "" {
		id, addr, ok := strings.Cut(*viewer, "=")
		vid, err := strconv.ParseUint(id, 10, 32)
		if !ok || err != nil {
			return fmt.Errorf("daemon: bad --viewer %q (want id=address)", *viewer)
		}
		cfg.Peers = []pcor.Peer{{Proc: pcor.ProcID(vid), Addr: addr}}
	}
	node, err := pcor.NewNode(cfg)
	if err != nil {
		return err
	}
	defer node.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		io.Copy(io.Discard, stdin)
		cancel()
	}()
	if _, err := fmt.Fprintf(stdout, "ready %s\n", node.Endpoints()[0].Addr); err != nil {
		return err
	}
	d := &Daemon{Node: node, Set: set, Owned: owned, Workers: *workers,
		Logf: func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }}
	err = d.Serve(ctx)
	if errors.Is(err, pcor.ErrClosed) {
		return nil
	}
	return err
}
