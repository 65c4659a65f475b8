package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/web"
)

// The tests run the real programs: mapviewer and pcorrun built once with
// go build (without the race detector, whatever the tests run under).
var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
	smallSet  tiles.Set
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// programs returns the built mapviewer and pcorrun and a small tile set:
// the paper's grid of 320x240 tiles on 4 node directories, 2 replicas.
func programs(t *testing.T) (mapviewer, pcorrun string, set tiles.Set) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the programs and runs processes")
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "mapviewer-test-"); buildErr != nil {
			return
		}
		for _, pkg := range []string{"github.com/pcor-go/pcor/examples/mapviewer", pcorrunPkg} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, filepath.Base(pkg)), pkg).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
		o := tiles.DefaultGenOptions(filepath.Join(binDir, "set"))
		o.TileW, o.TileH, o.Nodes, o.Replicas = 320, 240, 4, 2
		smallSet, buildErr = tiles.Generate(context.Background(), o)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "mapviewer"), filepath.Join(binDir, "pcorrun"), smallSet
}

// hangGuard bounds a command of the tests: they are checked for what they
// do, and a machine shared with much other work makes them slow.
const hangGuard = 10 * time.Minute

// run runs mapviewer with args and returns its output and error.
func run(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	mv, pr, _ := programs(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, mv, args...)
	cmd.Env = append(os.Environ(), "PCORRUN="+pr, "XDG_CACHE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("mapviewer %s still running after %v:\n%s", strings.Join(args, " "), timeout, out)
	}
	noStrays(t)
	return string(out), err
}

// pids lists the running processes of a binary.
func pids(bin string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == bin {
			out = append(out, pid)
		}
	}
	return out
}

// noStrays fails if a process of the built programs still runs (zombies
// aside, which /proc shows without an exe link).
func noStrays(t *testing.T) {
	t.Helper()
	mv, pr, _ := programs(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := append(pids(mv), pids(pr)...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("processes %v still running", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestDemoSmoke(t *testing.T) {
	_, _, set := programs(t)
	out, err := run(t, hangGuard, "demo", "--smoke", "--dir", set.Dir, "--window", "300x300", "--reps", "1")
	if err != nil {
		t.Fatalf("demo --smoke: %v\n%s", err, out)
	}
	for _, want := range []string{
		"starting 4 daemons",
		"smoke: 300-tile view",
		"4 daemons over pcor",
		"same pixels",
		"tiles from daemon 1=",
		"smoke: cached pan",
		"smoke: ok",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("\n%s", out)
}

// The paper-times table through pcorrun: the command itself compares
// every cluster view with the local one, pixel for pixel.
func TestPaperTimesUnderPcorrun(t *testing.T) {
	_, _, set := programs(t)
	out, err := run(t, hangGuard, "view", "--paper-times", "--dir", set.Dir, "--window", "300x300", "--reps", "1", "--max-daemons", "2")
	if err != nil {
		t.Fatalf("view --paper-times: %v\n%s", err, out)
	}
	checkPaperTable(t, out, 2)
}

// checkPaperTable checks the Figure 5 table: 7 rows; in every cell the
// ratio is the quotient of the printed cluster and local medians (to
// their rounding) and lies within the spread of the back-to-back pairs
// printed beside it (a ratio of medians always does); and one load line
// per run.
func checkPaperTable(t *testing.T, out string, daemons int) {
	t.Helper()
	row := regexp.MustCompile(`(?m)^R\d 1:\d+ +\d+((?: +[0-9.]+ [0-9.]+ [0-9.]+x \[[0-9.]+-[0-9.]+\])+)$`)
	cell := regexp.MustCompile(`([0-9.]+) ([0-9.]+) ([0-9.]+)x \[([0-9.]+)-([0-9.]+)\]`)
	rows := row.FindAllStringSubmatch(out, -1)
	if len(rows) != 7 || !strings.Contains(out, "cluster pixels equal local") {
		t.Fatalf("want 7 rows of 1..%d daemons:\n%s", daemons, out)
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q: %v\n%s", s, err, out)
		}
		return v
	}
	for _, r := range rows {
		cells := cell.FindAllStringSubmatch(r[1], -1)
		if len(cells) != daemons {
			t.Fatalf("row %q: %d cells, want %d", r[0], len(cells), daemons)
		}
		for _, c := range cells {
			local, med, ratio, lo, hi := num(c[1]), num(c[2]), num(c[3]), num(c[4]), num(c[5])
			// Medians are printed to 0.05 ms, ratios to 0.005.
			if ratio < (med-0.05)/(local+0.05)-0.005 || ratio > (med+0.05)/max(local-0.05, 0.01)+0.005 {
				t.Errorf("row %q: %.1f / %.1f printed as %.2fx", r[0], med, local, ratio)
			}
			if lo > hi || lo <= 0 || ratio < lo-0.01 || ratio > hi+0.01 {
				t.Errorf("row %q: ratio %.2fx outside its pairs' spread [%.2f-%.2f]", r[0], ratio, lo, hi)
			}
		}
	}
	if !regexp.MustCompile(`traffic a tile \(sent and received\): [0-9.]+ datagrams of data, [0-9.]+ acknowledgements alone, 2\.00 messages`).MatchString(out) {
		t.Errorf("no traffic line of one request and one reply a tile:\n%s", out)
	}
	// The cluster render's threads sleep while they wait for the daemons:
	// its context switches cannot all be zero.
	if m := regexp.MustCompile(`context switches of .* a tile: local [0-9.]+ voluntary .* cluster ([0-9.]+) \+ [0-9.]+`).FindStringSubmatch(out); m == nil || num(m[1]) <= 0 {
		t.Errorf("no line of context switches, or none counted in the cluster render:\n%s", out)
	}
	t.Logf("\n%s", out)
	if n := strings.Count(out, "% busy"); n != daemons {
		t.Errorf("%d load lines, want %d:\n%s", n, daemons, out)
	}
}

// The README's Figure 5 command, without --dir: the paper's procedural map
// is made in the cache ($XDG_CACHE_HOME set here), whatever the demo used.
func TestPaperTimesWithoutDir(t *testing.T) {
	out, err := run(t, hangGuard, "view", "--paper-times", "--window", "150x150", "--reps", "1", "--max-daemons", "1")
	if err != nil {
		t.Fatalf("view --paper-times: %v\n%s", err, out)
	}
	if !strings.Contains(out, "9600x9600 map of 640x480 tiles (procedural)") {
		t.Errorf("not the paper's map:\n%s", out)
	}
	checkPaperTable(t, out, 1)
}

// Every command's -h prints its flags and exits 0; a bad flag exits 2.
func TestHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"demo", "gen", "view", "serve", "daemon"} {
		out, err := run(t, hangGuard, cmd, "-h")
		if err != nil || !strings.Contains(out, "-dir") {
			t.Errorf("%s -h: %v\n%s", cmd, err, out)
		}
	}
	out, err := run(t, hangGuard, "gen", "--no-such-flag")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("gen --no-such-flag: %v, want exit status 2\n%s", err, out)
	}
}

// serve (and demo) listen on loopback only unless told --public.
func TestServeRefusesAllInterfaces(t *testing.T) {
	_, _, set := programs(t)
	for _, args := range [][]string{
		{"serve", "--dir", set.Dir, "--addr", "0.0.0.0:0"},
		{"serve", "--dir", set.Dir, "--addr", ":0"},
		{"demo", "--dir", set.Dir, "--addr", "[::]:0"},
	} {
		out, err := refused(t, args...)
		if err == nil || !strings.Contains(out, "--public") {
			t.Errorf("%v: %v, want a refusal naming --public\n%s", args, err, out)
		}
	}
	for _, a := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:0", "127.0.0.2:80"} {
		if err := checkAddr(a, false); err != nil {
			t.Errorf("checkAddr(%q): %v", a, err)
		}
	}
	if err := checkAddr("0.0.0.0:0", true); err != nil {
		t.Errorf("checkAddr with public: %v", err)
	}
}

// refused runs mapviewer with args, which should refuse to start, and
// returns its output and exit. One that serves instead is killed as soon
// as it prints its URL (an error naming the URL is returned), so that no
// process of it outlives the test.
func refused(t *testing.T, args ...string) (string, error) {
	t.Helper()
	mv, pr, _ := programs(t)
	cmd := exec.Command(mv, args...)
	cmd.Env = append(os.Environ(), "PCORRUN="+pr, "XDG_CACHE_HOME="+t.TempDir())
	pr0, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr0.Close()
		t.Fatal(err)
	}
	lines := make(chan string)
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		go func() {
			for range lines {
			}
		}()
		noStrays(t)
		pr0.Close()
	}()
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr0)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var out strings.Builder
	guard := time.NewTimer(hangGuard)
	defer guard.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return out.String(), cmd.Wait()
			}
			out.WriteString(l + "\n")
			if strings.Contains(l, "map viewer on") {
				return out.String(), fmt.Errorf("served: %s", l)
			}
		case <-guard.C:
			t.Fatalf("mapviewer %s still running after %v:\n%s", strings.Join(args, " "), hangGuard, out.String())
		}
	}
}

// gen's defaults are the demo's layout: 4 node directories, 2 copies, so
// that serving its set with 4 daemons works.
func TestGenDefaultsServeFourDaemons(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "set")
	out, err := run(t, hangGuard, "gen", "--dir", dir, "--cols", "4", "--rows", "3", "--tile-w", "80", "--tile-h", "60")
	if err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	s, err := tiles.Open(dir)
	if err != nil || s.Nodes != 4 || s.Replicas != 2 {
		t.Fatalf("gen made %+v (%v), want 4 nodes x2 replicas", s, err)
	}
	png := filepath.Join(t.TempDir(), "v.png")
	out, err = run(t, hangGuard, "view", "--daemons", "4", "--dir", dir, "--window", "100x100", "--out", png)
	if err != nil || !strings.Contains(out, "4 daemons over pcor") {
		t.Fatalf("view --daemons 4 on gen's set: %v\n%s", err, out)
	}
}

// serve --daemons N stops on SIGINT with exit status 0, as the demo does,
// without reporting its daemons down.
func TestServeDaemonsInterruptExitsZero(t *testing.T) {
	mv, pr, set := programs(t)
	cmd := exec.Command(mv, "serve", "--daemons", "2", "--dir", set.Dir, "--addr", "127.0.0.1:0", "--pcorrun", pr)
	url, done, lines := startServing(t, cmd)
	if _, err := http.Get(url + "info"); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve --daemons 2 after SIGINT: %v\n%s", err, lines())
		}
		// The daemons stopped with the viewer: no failure to report.
		if strings.Contains(lines(), "is down") {
			t.Errorf("serve --daemons 2 reported its daemons down when stopped:\n%s", lines())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve still running 2 minutes after SIGINT")
	}
}

// startServing starts cmd (demo or serve), waits for its URL and returns
// it, a channel with its exit and its output so far. The test ends with no
// process left.
func startServing(t *testing.T, cmd *exec.Cmd) (url string, done <-chan error, lines func() string) {
	t.Helper()
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dc := make(chan error, 1)
	urlc := make(chan string, 1)
	var buf bytes.Buffer
	var mu sync.Mutex
	lines = func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`map viewer on (http://\S+)`)
		for sc.Scan() {
			mu.Lock()
			buf.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
		}
		dc <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		noStrays(t)
	})
	select {
	case url = <-urlc:
	case err := <-dc:
		t.Fatalf("%v exited: %v\n%s", cmd.Args, err, lines())
	case <-time.After(5 * time.Minute):
		t.Fatalf("no URL after 5 minutes:\n%s", lines())
	}
	return url, dc, lines
}

// view --daemons runs itself under pcorrun; its PNG must equal the local
// loader's byte for byte.
func TestViewDaemonsEqualsLocal(t *testing.T) {
	_, _, set := programs(t)
	dir := t.TempDir()
	local, cl := filepath.Join(dir, "local.png"), filepath.Join(dir, "cluster.png")
	if out, err := run(t, hangGuard, "view", "--dir", set.Dir, "--paper", "4", "--window", "300x300", "--out", local); err != nil {
		t.Fatalf("local view: %v\n%s", err, out)
	}
	out, err := run(t, hangGuard, "view", "--daemons", "3", "--dir", set.Dir, "--paper", "4", "--window", "300x300", "--out", cl)
	if err != nil || !strings.Contains(out, "3 daemons over pcor") {
		t.Fatalf("view --daemons 3: %v\n%s", err, out)
	}
	a, err1 := os.ReadFile(local)
	b, err2 := os.ReadFile(cl)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		t.Fatalf("cluster PNG differs from the local one (%v, %v)", err1, err2)
	}
}

// The demo serves until interrupted. A killed daemon is reported down on
// /status and in the log, with the command that starts it again; its
// tiles come from the replicas. Started with that command, it rejoins and
// serves again. SIGINT stops the viewer, the daemons and pcorrun.
func TestDemoServesUntilInterrupted(t *testing.T) {
	mv, pr, set := programs(t)
	cmd := exec.Command(mv, "demo", "--dir", set.Dir, "--addr", "127.0.0.1:0", "--window", "300x300", "--pcorrun", pr)
	url, done, lines := startServing(t, cmd)
	get := func(q string) http.Header {
		t.Helper()
		r, err := http.Get(url + "render?" + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || r.Header.Get("X-Tile-Errors") != "" {
			t.Fatalf("%s: %s %s %s", q, r.Status, body, r.Header.Get("X-Tile-Errors"))
		}
		return r.Header
	}
	daemon2 := func() web.Daemon {
		t.Helper()
		r, err := http.Get(url + "status")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var st web.Status
		if err := json.NewDecoder(r.Body).Decode(&st); err != nil || len(st.Daemons) != 4 {
			t.Fatalf("/status: %+v %v", st, err)
		}
		return st.Daemons[1]
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 2 minutes\n%s", what, lines())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if d := daemon2(); !d.Up {
		t.Fatalf("daemon 2 down at the start: %+v", d)
	}
	if src := get("x=0&y=0&s=16&w=300&h=300").Get("X-Sources"); !strings.Contains(src, "daemon 2=") {
		t.Fatalf("sources %q", src)
	}
	// Kill daemon 2 (rank 2): the directory announces it gone, and the
	// next uncached view takes its tiles from the replicas.
	victim := 0
	for _, p := range pids(mv) {
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
		if bytes.Contains(env, []byte("\x00PCOR_RANK=2\x00")) {
			victim = p
		}
	}
	if victim == 0 {
		t.Fatal("no process of rank 2")
	}
	syscall.Kill(victim, syscall.SIGKILL)
	waitFor("daemon 2 reported down on /status", func() bool { return !daemon2().Up })
	if d := daemon2(); d.Reason == "" || d.Since.IsZero() {
		t.Errorf("daemon 2 down without a reason or time: %+v", d)
	}
	src := get("x=0&y=0&s=8&w=300&h=300").Get("X-Sources")
	if strings.Contains(src, "daemon 2=") || !strings.Contains(src, "daemon 1=") {
		t.Errorf("after killing daemon 2, sources %q", src)
	}
	restart := regexp.MustCompile(`daemon 2: to start it again: (.+)`)
	waitFor("the restart command in the log", func() bool { return restart.MatchString(lines()) })
	if !strings.Contains(lines(), "daemon 2 is down") {
		t.Errorf("log does not say daemon 2 is down:\n%s", lines())
	}
	// The command from the log, as a user would paste it into a shell.
	rc := exec.Command("sh", "-c", restart.FindStringSubmatch(lines())[1])
	rc.Stdout, rc.Stderr = os.Stderr, os.Stderr
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	rdone := make(chan error, 1)
	go func() { rdone <- rc.Wait() }()
	waitFor("daemon 2 reported up again", func() bool { return daemon2().Up })
	// The log line comes through pcorrun's pipe, maybe after /status.
	waitFor("the log says daemon 2 is back", func() bool { return strings.Contains(lines(), "daemon 2 is back") })
	if src := get("x=0&y=0&s=4&w=300&h=300").Get("X-Sources"); !strings.Contains(src, "daemon 2=") {
		t.Errorf("after the restart, sources %q", src)
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo after SIGINT: %v\n%s", err, lines())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("demo still running 2 minutes after SIGINT")
	}
	// The restarted daemon is not pcorrun's: it leaves when the viewer does.
	select {
	case err := <-rdone:
		if err != nil {
			t.Errorf("restarted daemon: %v", err)
		}
	case <-time.After(time.Minute):
		rc.Process.Kill()
		t.Errorf("restarted daemon still running a minute after the viewer left")
	}
}
