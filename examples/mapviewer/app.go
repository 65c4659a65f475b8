package main

import (
	"context"
	"fmt"
	"os"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/examples/mapviewer/cluster"
	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

// inApp reports whether this process was started as a process of a pcor
// application (by pcorrun): then rank 0 is the viewer and the others are
// daemons, whatever the command.
func inApp() bool { return os.Getenv(directory.EnvCoord) != "" }

// member is this process's place in the application: nil outside one.
type member struct {
	p *cluster.Process
}

// joinApp joins the application when started in one. A daemon serves
// the set in dir until the viewer leaves, and done is then true: the
// command has nothing more to do.
func joinApp(ctx context.Context, dir string) (m *member, done bool, err error) {
	if !inApp() {
		return nil, false, nil
	}
	p, err := cluster.JoinEnv(ctx)
	if err != nil {
		return nil, true, err
	}
	if p.Rank() != cluster.ViewerProc {
		defer p.Close()
		return nil, true, cluster.RunDaemon(ctx, p, dir, 0, os.Stderr)
	}
	return &member{p: p}, false, nil
}

// loader is the viewer's loader: through the daemons in an application
// with daemons, else local threads; kind describes it.
func (m *member) loader(ctx context.Context, set tiles.Set) (l loader.Loader, kind string, err error) {
	if m == nil || m.p.Daemons() == 0 {
		return loader.NewLocal(set, 0), "local threads", nil
	}
	cl, err := m.p.Viewer(ctx, set, 0)
	if err != nil {
		return nil, "", err
	}
	return cl, fmt.Sprintf("%d daemons over pcor", m.p.Daemons()), nil
}

// close leaves the application: the daemons then exit.
func (m *member) close() {
	if m != nil {
		m.p.Close()
	}
}

// lost is closed when the directory session ends (pcorrun went away).
func (m *member) lost() <-chan struct{} {
	if m == nil {
		return nil
	}
	return m.p.Node.Directory().Done()
}
