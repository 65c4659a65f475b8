package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/view"
	"github.com/pcor-go/pcor/pcor"
)

// The test binary doubles as the daemon program.
const daemonEnv = "MAPVIEWER_TEST_DAEMON"

func TestMain(m *testing.M) {
	if os.Getenv(daemonEnv) == "1" {
		if err := DaemonMain(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if halfDir != "" {
		os.RemoveAll(halfDir)
	}
	os.Exit(code)
}

func testCommand(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), daemonEnv+"=1")
	cmd.Stderr = os.Stderr
	return cmd
}

// halfPaper is the paper's map at half the size: 15x20 tiles of 320x240,
// viewed in a 300x300 window, so the seven regions cover the same tiles.
var halfWindow = view.Window{W: 300, H: 300}

var (
	halfOnce sync.Once
	halfSet  tiles.Set
	halfErr  error
	halfDir  string
)

func halfPaperSet(t *testing.T) tiles.Set {
	t.Helper()
	halfOnce.Do(func() {
		halfDir, halfErr = os.MkdirTemp("", "mapviewer-cluster-")
		if halfErr != nil {
			return
		}
		o := tiles.DefaultGenOptions(halfDir)
		o.TileW, o.TileH, o.Nodes, o.Replicas = 320, 240, 3, 2
		halfSet, halfErr = tiles.Generate(context.Background(), o)
	})
	if halfErr != nil {
		t.Fatal(halfErr)
	}
	return halfSet
}

func copySet(t *testing.T, s tiles.Set, nodes, replicas int) tiles.Set {
	t.Helper()
	out, err := tiles.Relayout(s, t.TempDir(), nodes, replicas)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// inProcess runs daemons as goroutines on their own nodes of this process.
func inProcess(t *testing.T, set tiles.Set, daemons int) *Loader {
	t.Helper()
	const job = 0x5eed
	viewer, err := pcor.NewNode(pcor.Config{Proc: ViewerProc, JobKey: job})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	owner := make([]pcor.ProcID, set.Nodes)
	for i := range daemons {
		n, err := pcor.NewNode(pcor.Config{Proc: pcor.ProcID(i + 1), JobKey: job,
			Peers: []pcor.Peer{{Proc: ViewerProc, Addr: viewer.Endpoints()[0].Addr}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := viewer.AddPeer(pcor.Peer{Proc: n.Proc(), Addr: n.Endpoints()[0].Addr}); err != nil {
			t.Fatal(err)
		}
		d := &Daemon{Node: n, Set: set}
		for k := i; k < set.Nodes; k += daemons {
			d.Owned = append(d.Owned, k)
			owner[k] = n.Proc()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.Serve(ctx); err != nil {
				t.Errorf("daemon %d: %v", n.Proc(), err)
			}
			n.Close()
		}()
	}
	l, err := NewLoader(viewer, set, owner, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		viewer.Close()
	})
	return l
}

func renderRegion(t *testing.T, l loader.Loader, set tiles.Set, i int) []byte {
	t.Helper()
	pr := view.PaperRegions(set, halfWindow)[i]
	p, err := view.Fit(set, pr.Region, halfWindow)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := view.Render(ctx, l, p)
	if err != nil {
		t.Fatalf("%s: %v", pr.Name, err)
	}
	return res.Img.Pix
}

var (
	localMu  sync.Mutex
	localPix = map[int][]byte{}
)

// localView is paper region i rendered by the local loader.
func localView(t *testing.T, set tiles.Set, i int) []byte {
	localMu.Lock()
	defer localMu.Unlock()
	if localPix[i] == nil {
		localPix[i] = renderRegion(t, loader.NewLocal(set, 0), set, i)
	}
	return localPix[i]
}

func compareRegions(t *testing.T, what string, l loader.Loader, set tiles.Set, regions []int) {
	t.Helper()
	for _, i := range regions {
		got := renderRegion(t, l, set, i)
		if string(got) != string(localView(t, set, i)) {
			t.Errorf("%s: region %s differs from the local loader", what, view.PaperRegions(set, halfWindow)[i].Name)
		}
	}
}

func TestInProcessEqualsLocal(t *testing.T) {
	set := halfPaperSet(t)
	compareRegions(t, "in-process daemons", inProcess(t, set, 2), set, inProcessRegions)
}

func TestInProcessTileErrors(t *testing.T) {
	set := copySet(t, halfPaperSet(t), 2, 1)
	bad := tiles.ID{Col: 2, Row: 3}
	// The copy is hard-linked: replace the file, do not write through it.
	os.Remove(set.Path(bad, set.Holders(bad)[0]))
	os.WriteFile(set.Path(bad, set.Holders(bad)[0]), []byte("not a jpeg"), 0o644)
	l := inProcess(t, set, 2)
	_, err := l.Load(context.Background(), bad, 4)
	var te *tiles.TileError
	if !errors.Is(err, tiles.ErrCorrupt) || !errors.As(err, &te) || te.Tile != bad || !strings.Contains(err.Error(), bad.Name()) {
		t.Fatalf("corrupt tile via daemon: %v", err)
	}
	if _, err := l.Load(context.Background(), tiles.ID{Col: 2, Row: 2}, 4); err != nil {
		t.Errorf("good tile: %v", err)
	}
	if _, err := l.Load(context.Background(), tiles.ID{Col: 99}, 4); !errors.Is(err, tiles.ErrBadSet) {
		t.Errorf("tile outside the grid: %v", err)
	}
}

func TestProcessesEqualLocal(t *testing.T) {
	set := halfPaperSet(t)
	c, err := Start(context.Background(), set, testCommand, Options{Daemons: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	compareRegions(t, "2 daemon processes", c.Loader, set, []int{0, 1, 2, 3, 4, 5, 6})
}

// killAfter kills a daemon when the loader has delivered n fragments.
type killAfter struct {
	inner loader.Loader
	n     int64
	count atomic.Int64
	kill  func()
}

func (k *killAfter) Load(ctx context.Context, id tiles.ID, scale int) (loader.Fragment, error) {
	f, err := k.inner.Load(ctx, id, scale)
	if k.count.Add(1) == k.n {
		k.kill()
	}
	return f, err
}

func killMidView(t *testing.T, replicas int) (*view.Result, error, tiles.Set, *Proc) {
	set := copySet(t, halfPaperSet(t), 3, replicas)
	c, err := Start(context.Background(), set, testCommand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	victim := c.Daemons[1]
	kl := &killAfter{inner: c.Loader, n: 20, kill: func() {
		victim.Cmd.Process.Kill()
		<-victim.Done()
	}}
	p, err := view.Fit(set, view.Region{W: set.MapW(), H: set.MapH()}, halfWindow)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := view.Render(ctx, kl, p)
	if ctx.Err() != nil {
		t.Fatalf("view still waiting after 30 s: %v", err)
	}
	return res, err, set, victim
}

func TestDaemonKilledMidViewFails(t *testing.T) {
	res, err, set, victim := killMidView(t, 1)
	if err == nil {
		t.Fatal("view succeeded without the killed daemon's tiles")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error %v, want ErrUnavailable", err)
	}
	failed := 0
	for _, tr := range res.Tiles {
		if tr.Err == nil {
			continue
		}
		failed++
		if !strings.Contains(err.Error(), tr.ID.Name()) {
			t.Errorf("error does not name %s", tr.ID.Name())
		}
		if !containsInt(victim.Owned, set.Holders(tr.ID)[0]) {
			t.Errorf("%s failed but is not on the killed daemon", tr.ID.Name())
		}
	}
	if failed == 0 {
		t.Errorf("no tile failed")
	}
	t.Logf("%d of %d tiles failed after the kill, view took %v", failed, len(res.Tiles), res.Elapsed)
}

func TestDaemonKilledMidViewReplica(t *testing.T) {
	res, err, _, victim := killMidView(t, 2)
	if err != nil {
		t.Fatalf("replicas did not serve the killed daemon's tiles: %v", err)
	}
	for _, tr := range res.Tiles {
		if tr.Source == fmt.Sprintf("daemon %d", victim.ID) {
			continue // served before the kill
		}
		if !strings.HasPrefix(tr.Source, "daemon ") {
			t.Errorf("%s source %q", tr.ID.Name(), tr.Source)
		}
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestStartBadDaemon(t *testing.T) {
	set := halfPaperSet(t)
	bad := func(args []string) *exec.Cmd { return testCommand(append(args, "--own", "99")) }
	start := time.Now()
	if _, err := Start(context.Background(), set, bad, Options{}); err == nil {
		t.Fatal("daemon with a bad node directory started")
	}
	if time.Since(start) > StartTimeout {
		t.Errorf("failure took %v", time.Since(start))
	}
}
