package cluster

import (
	"context"
	"fmt"
	"io"

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

// RunDaemon serves the tile set in dir as daemon p.
func RunDaemon(ctx context.Context, p *Process, dir string, workers int, stderr io.Writer) error {
	set, err := tiles.Open(dir)
	if err != nil {
		return fmt.Errorf("daemon %d: %w", p.Rank(), err)
	}
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }
	return p.Serve(ctx, set, workers, logf)
}
