package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/pcor"
)

// app is a directory served by the test for an application of size
// processes, as pcorrun serves it.
type app struct {
	srv  *directory.Server
	addr string
	key  uint64
	size int
}

func newApp(t *testing.T, size int) *app {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var kb [8]byte
	rand.Read(kb[:])
	a := &app{addr: ln.Addr().String(), key: binary.LittleEndian.Uint64(kb[:]), size: size}
	// The heartbeat timeout pcorrun gets from the commands (appHeartbeat):
	// a process killed is seen at once (its session closes), and on a
	// loaded machine a live one may wait seconds for a CPU.
	cfg := directory.ServerConfig{JobKey: a.key, Size: size, HeartbeatTimeout: 10 * time.Second}
	if a.srv, err = directory.NewServer(ln, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.srv.Close() })
	return a
}

func (a *app) join(ctx context.Context, rank int) (*Process, error) {
	return Join(ctx, pcor.JoinConfig{Coord: a.addr, JobKey: a.key, Rank: rank, Size: a.size, Directory: directory.ServeNever})
}

// testRequestTimeout bounds a request in the tests: a guard against a
// hang, sized for the race detector on a machine shared with much other
// work, where a 300-tile view can take minutes.
const testRequestTimeout = 10 * time.Minute

// env is the environment pcorrun gives the process of a rank.
func (a *app) env(rank int) []string {
	return []string{
		directory.EnvCoord + "=" + a.addr,
		directory.EnvRank + "=" + strconv.Itoa(rank),
		directory.EnvSize + "=" + strconv.Itoa(a.size),
		directory.EnvJobKey + "=" + directory.FormatJobKey(a.key),
		directory.EnvDirectory + "=" + directory.ServeNever,
	}
}

// viewer joins the test process as rank 0 and returns its loader.
func (a *app) viewer(t *testing.T, set tiles.Set) (*Process, *Loader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), JoinTimeout+5*time.Second)
	defer cancel()
	v, err := a.join(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	l, err := v.Viewer(ctx, set, testRequestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	return v, l
}

// inProcess runs the daemons as goroutines, each its own node joined
// through the directory.
func inProcess(t *testing.T, set tiles.Set, daemons int) *Loader {
	t.Helper()
	a := newApp(t, daemons+1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for r := 1; r <= daemons; r++ {
		d, err := a.join(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer d.Close()
			if err := d.Serve(ctx, set, 0, nil); err != nil {
				t.Errorf("daemon %d: %v", r, err)
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	_, l := a.viewer(t, set)
	return l
}

// daemonProc is a daemon process started with the environment pcorrun
// gives it.
type daemonProc struct {
	rank int
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startDaemons starts daemon processes for ranks 1..size-1 serving the
// set in dir.
func (a *app) startDaemons(t *testing.T, dir string) []*daemonProc {
	t.Helper()
	var ps []*daemonProc
	for r := 1; r < a.size; r++ {
		ps = append(ps, a.startDaemon(t, dir, r))
	}
	return ps
}

// startDaemon starts the daemon process of rank r. It must exit by
// itself once the viewer has left.
func (a *app) startDaemon(t *testing.T, dir string, r int) *daemonProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), daemonEnv+"=1", daemonEnv+"_DIR="+dir), a.env(r)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &daemonProc{rank: r, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		// The viewer has left by now (cleanups run last first): the
		// daemon exits by itself.
		t.Helper()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
			t.Errorf("daemon %d still running 10 s after the viewer left", p.rank)
		}
	})
	return p
}

// processes starts daemons as processes and joins the test as the viewer.
func processes(t *testing.T, set tiles.Set, daemons int) (*Loader, []*daemonProc) {
	t.Helper()
	a := newApp(t, daemons+1)
	ps := a.startDaemons(t, set.Dir)
	_, l := a.viewer(t, set)
	return l, ps
}

func TestDaemonsExitWhenViewerLeaves(t *testing.T) {
	set := halfPaperSet(t)
	a := newApp(t, 3)
	ps := a.startDaemons(t, set.Dir)
	ctx, cancel := context.WithTimeout(context.Background(), JoinTimeout)
	defer cancel()
	v, err := a.join(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Viewer(ctx, set, 0); err != nil {
		t.Fatal(err)
	}
	v.Close()
	for _, p := range ps {
		select {
		case <-p.done:
			if p.err != nil {
				t.Errorf("daemon %d: %v", p.rank, p.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("daemon %d still running after the viewer left", p.rank)
		}
	}
}

func TestOwned(t *testing.T) {
	set := tiles.Set{Nodes: 5}
	got := fmt.Sprint(Owned(set, 1, 2), Owned(set, 2, 2), Owned(set, 3, 2), Owned(set, 0, 2), Owned(set, 4, 4))
	if want := "[0 2 4] [1 3] [] [] [3]"; got != want {
		t.Errorf("Owned = %s, want %s", got, want)
	}
}

// A daemon's share of its host's CPUs divides them among the daemons on
// that host (the viewer and other hosts apart), one at least.
func TestCPUShare(t *testing.T) {
	ms := func(hosts ...string) []directory.Member {
		var out []directory.Member
		for i, h := range hosts {
			out = append(out, directory.Member{Proc: uint32(i), Host: h})
		}
		return out
	}
	for _, c := range []struct {
		ncpu    int
		members []directory.Member
		want    int
	}{
		{2, ms("a", "a", "a", "a", "a"), 1}, // viewer and 4 daemons on 2 CPUs
		{2, ms("a", "a"), 2},                // one daemon
		{2, ms("a", "a", "a"), 1},
		{8, ms("a", "a", "b", "a", "b"), 4}, // 2 daemons here, 2 elsewhere
		{8, ms("b", "a", "a", "a"), 2},      // the viewer elsewhere
		{1, ms("a", "a", "a"), 1},
	} {
		if got := cpuShare(c.ncpu, "a", c.members); got != c.want {
			t.Errorf("cpuShare(%d, %v) = %d, want %d", c.ncpu, c.members, got, c.want)
		}
	}
}
