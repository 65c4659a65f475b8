package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

// DaemonMain runs a daemon started as a process of the application (by
// pcorrun, or with the PCOR_* variables set otherwise): it joins through
// the directory, then serves its node directories of the tile set in dir
// until ctx ends or the viewer leaves. It joins before opening the set,
// so a daemon that cannot serve is seen leaving at once by the viewer.
func DaemonMain(ctx context.Context, dir string, workers int, stderr io.Writer) error {
	p, err := JoinEnv(ctx)
	if err != nil {
		return err
	}
	defer p.Close()
	return RunDaemon(ctx, p, dir, workers, stderr)
}

// RunDaemon serves the tile set in dir as daemon p, the process's only
// job: it takes its share of the host's CPUs (shareCPUs) and collects
// garbage less often (GCPercent).
func RunDaemon(ctx context.Context, p *Process, dir string, workers int, stderr io.Writer) error {
	set, err := tiles.Open(dir)
	if err != nil {
		return fmt.Errorf("daemon %d: %w", p.Rank(), err)
	}
	p.shareCPUs(ctx)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }
	return p.Serve(ctx, set, workers, logf)
}

// GCPercent is a daemon's GOGC (unless the environment sets one).
// The local loader timed against the daemons runs with it too.
// Its live heap is a few MB and a tile allocates half a MB (the decoded
// image), so at Go's default of 100 it collected every dozen tiles or so:
// 0.08 collections a tile, against 0.02 at 400 (the 4-daemon paper run),
// each of which stops the daemon's threads, which on a host with more
// threads than CPUs wait for a CPU to stop. A daemon's heap then grows to
// some 30 MB.
const GCPercent = 400

// membersWait bounds how long a daemon waits for the application's other
// processes to join before it counts those sharing its host.
const membersWait = 5 * time.Second

// shareCPUs sets GOMAXPROCS (unless the environment sets it) to this
// daemon's share of the host's CPUs among the daemons of the application
// on the host (cpuShare). Four daemons on 2 CPUs each running 2 decodes
// on 2 Ps kept 8 threads ready for 2 CPUs: 45% more context switches
// than with one each. It waits a moment for the others to join first.
func (p *Process) shareCPUs(ctx context.Context) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	dc := p.Node.Directory()
	if dc == nil {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, membersWait)
	dc.Wait(wctx, p.Size) // those present count if not all come
	cancel()
	me, ok := dc.Lookup(uint32(p.Rank()))
	if !ok {
		return
	}
	runtime.GOMAXPROCS(cpuShare(runtime.NumCPU(), me.Host, dc.Members()))
}

// cpuShare is ncpu divided among the daemons (processes other than the
// viewer) of members on host, at least 1.
func cpuShare(ncpu int, host string, members []directory.Member) int {
	n := 0
	for _, m := range members {
		if m.Proc != uint32(ViewerProc) && m.Host == host {
			n++
		}
	}
	return max(1, ncpu/max(1, n))
}
