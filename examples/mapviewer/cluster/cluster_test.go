package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := DaemonMain(ctx, os.Getenv(daemonEnv+"_DIR"), 0, os.Stderr)
		stop()
		if err != nil {
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

func renderRegion(t *testing.T, l loader.Loader, set tiles.Set, i int) []byte {
	t.Helper()
	pr := view.PaperRegions(set, halfWindow)[i]
	p, err := view.Fit(set, pr.Region, halfWindow)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testRequestTimeout)
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
	l, _ := processes(t, set, 2)
	compareRegions(t, "2 daemon processes", l, set, []int{0, 1, 2, 3, 4, 5, 6})
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

func killMidView(t *testing.T, replicas int) (*view.Result, tiles.Set, *daemonProc, error) {
	set := copySet(t, halfPaperSet(t), 3, replicas)
	l, ps := processes(t, set, 3)
	victim := ps[1]
	kl := &killAfter{inner: l, n: 20, kill: func() {
		victim.cmd.Process.Kill()
		<-victim.done
	}}
	p, err := view.Fit(set, view.Region{W: set.MapW(), H: set.MapH()}, halfWindow)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := view.Render(ctx, kl, p)
	if ctx.Err() != nil {
		t.Fatalf("view still waiting after 3 minutes: %v", err)
	}
	return res, set, victim, err
}

func TestDaemonKilledMidViewFails(t *testing.T) {
	res, set, victim, err := killMidView(t, 1)
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
		if !containsInt(Owned(set, pcor.ProcID(victim.rank), 3), set.Holders(tr.ID)[0]) {
			t.Errorf("%s failed but is not on the killed daemon", tr.ID.Name())
		}
	}
	if failed == 0 {
		t.Errorf("no tile failed")
	}
	t.Logf("%d of %d tiles failed after the kill, view took %v", failed, len(res.Tiles), res.Elapsed)
}

func TestDaemonKilledMidViewReplica(t *testing.T) {
	res, _, victim, err := killMidView(t, 2)
	if err != nil {
		t.Fatalf("replicas did not serve the killed daemon's tiles: %v", err)
	}
	for _, tr := range res.Tiles {
		if tr.Source == fmt.Sprintf("daemon %d", victim.rank) {
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

// A daemon that cannot serve (here: its tile set is missing) leaves at
// once: the viewer's wait for the daemons fails naming it or, if the
// daemons had all joined before one left, its tiles fail at once, instead
// of anything running into JoinTimeout or DefaultTimeout.
func TestBadDaemonFailsFast(t *testing.T) {
	set := halfPaperSet(t)
	a := newApp(t, 3)
	bad := a.startDaemons(t, filepath.Join(t.TempDir(), "missing"))
	ctx, cancel := context.WithTimeout(context.Background(), JoinTimeout)
	defer cancel()
	v, err := a.join(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	start := time.Now()
	l, err := v.Viewer(ctx, set, 0)
	if err != nil {
		if !errors.Is(err, ErrMembership) || !strings.Contains(err.Error(), "left before") {
			t.Fatalf("viewer with failing daemons: %v", err)
		}
	} else {
		for _, p := range bad {
			<-p.done
		}
		if _, err := l.Load(ctx, tiles.ID{Col: 1, Row: 1}, 4); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("load with every daemon gone: %v", err)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failure took %v", d)
	}
	for _, p := range bad {
		<-p.done
		if p.err == nil {
			t.Errorf("daemon %d without a tile set exited 0", p.rank)
		}
	}
}

// A daemon that dies is reported down, in the loader's status and its
// log, and its tiles come from the replicas; started again with its rank,
// it rejoins, is reported up and serves its tiles again.
func TestDaemonRestartRejoins(t *testing.T) {
	set := copySet(t, halfPaperSet(t), 3, 2)
	a := newApp(t, 4)
	ps := a.startDaemons(t, set.Dir)
	ctx, cancel := context.WithTimeout(context.Background(), JoinTimeout)
	defer cancel()
	v, err := a.join(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var logMu sync.Mutex
	var log strings.Builder
	v.Logf = func(f string, args ...any) {
		logMu.Lock()
		fmt.Fprintf(&log, f+"\n", args...)
		logMu.Unlock()
	}
	l, err := v.Viewer(ctx, set, testRequestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	const victim = 2
	// A tile whose first copy is on the victim's node directory.
	var id tiles.ID
	for _, c := range set.All() {
		if set.Holders(c)[0] == victim-1 {
			id = c
			break
		}
	}
	load := func(scale int) string {
		t.Helper()
		f, err := l.Load(ctx, id, scale)
		if err != nil {
			t.Fatal(err)
		}
		return f.Source
	}
	if src := load(4); src != fmt.Sprintf("daemon %d", victim) {
		t.Fatalf("before: %s from %q", id.Name(), src)
	}
	status := func() DaemonStatus { return l.Daemons()[victim-1] }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 15 s: %+v", what, l.Daemons())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	ps[victim-1].cmd.Process.Kill()
	<-ps[victim-1].done
	waitFor("daemon marked down", func() bool { return !status().Up })
	if st := status(); st.Reason == "" || st.Since.IsZero() || len(st.Nodes) != 1 || st.Nodes[0] != victim-1 {
		t.Errorf("status of the dead daemon: %+v", st)
	}
	if src := load(8); src == fmt.Sprintf("daemon %d", victim) || !strings.HasPrefix(src, "daemon ") {
		t.Errorf("while down: %s from %q, want a replica", id.Name(), src)
	}
	a.startDaemon(t, set.Dir, victim)
	waitFor("daemon marked up", func() bool { return status().Up })
	if src := load(2); src != fmt.Sprintf("daemon %d", victim) {
		t.Errorf("after the restart: %s from %q", id.Name(), src)
	}
	logMu.Lock()
	got := log.String()
	logMu.Unlock()
	if !strings.Contains(got, fmt.Sprintf("daemon %d is down", victim)) || !strings.Contains(got, fmt.Sprintf("daemon %d is back", victim)) {
		t.Errorf("log:\n%s", got)
	}
	t.Logf("log:\n%s", got)
}

// driven counts what a node's ports received while a thread waiting on
// its own request drove the port: batches of datagrams it took itself,
// and sleeps in the fabric waiting for them.
func driven(n *pcor.Node) (batches, sleeps uint64) {
	for _, s := range n.Stats() {
		batches += s.ThreadBatches
		sleeps += s.DriverSleeps
	}
	return batches, sleeps
}

// TestTileWaitsLeaveThePort checks that the viewer's goroutines waiting
// for tiles never drive its port: they wait on their requests' Done
// channels, and the port's dispatcher goroutine receives. A driving
// waiter spun on the port for 100 µs at a time, on the CPUs the daemons
// decode on (the daemons wait the same way, but their node also answers
// other blocking receives, so they are not checked here).
func TestTileWaitsLeaveThePort(t *testing.T) {
	set := halfPaperSet(t)
	l := inProcess(t, set, 2)
	b0, s0 := driven(l.node)
	for _, i := range []int{3, 4} { // R4 and R5: 35 and 80 tiles
		renderRegion(t, l, set, i)
	}
	if b, s := driven(l.node); b != b0 || s != s0 {
		t.Errorf("a goroutine waiting for a tile drove the viewer's port: %d batches received, %d sleeps in the fabric", b-b0, s-s0)
	}
}
