package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/examples/mapviewer/cluster"
	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/web"
	"github.com/pcor-go/pcor/pcor"
)

// inApp reports whether this process was started as a process of a pcor
// application (by pcorrun): then rank 0 is the viewer and the others are
// daemons, whatever the command.
func inApp() bool { return os.Getenv(directory.EnvCoord) != "" }

// member is this process's place in the application: nil outside one.
type member struct {
	p  *cluster.Process
	cl *cluster.Loader // set by loader
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
	m.p.Logf = func(f string, args ...any) { fmt.Printf(f+"\n", args...) }
	m.p.RestartHint = func(p pcor.ProcID) string { return restartCommand(set.Dir, p) }
	cl, err := m.p.Viewer(ctx, set, 0)
	if err != nil {
		return nil, "", err
	}
	m.cl = cl
	return cl, fmt.Sprintf("%d daemons over pcor", m.p.Daemons()), nil
}

// restartCommand is the shell command that starts daemon p of this
// application again: the variables pcorrun gave this process, with p's
// rank, and this program's daemon command.
func restartCommand(dir string, p pcor.ProcID) string {
	self, err := selfPath()
	if err != nil {
		self = "mapviewer"
	}
	var b strings.Builder
	for _, k := range []string{directory.EnvCoord, directory.EnvJobKey, directory.EnvSize} {
		fmt.Fprintf(&b, "%s=%s ", k, shellQuote(os.Getenv(k)))
	}
	fmt.Fprintf(&b, "%s=%d %s daemon --dir %s", directory.EnvRank, p, shellQuote(self), shellQuote(dir))
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// daemons is the daemons' state for the page: nil without daemons.
func (m *member) daemons() func() []web.Daemon {
	if m == nil || m.cl == nil {
		return nil
	}
	return func() []web.Daemon {
		var out []web.Daemon
		for _, d := range m.cl.Daemons() {
			out = append(out, web.Daemon{Proc: int(d.Proc), Nodes: d.Nodes, Up: d.Up, Reason: d.Reason, Since: d.Since, Served: d.Served})
		}
		return out
	}
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
