package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bin holds the pcorrun and ring binaries built for the tests.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ringtest")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	bin = dir
	code := 1
	out, err := exec.Command("go", "build", "-o", dir, "github.com/pcor-go/pcor/cmd/pcorrun", "github.com/pcor-go/pcor/examples/ring").CombinedOutput()
	if err != nil {
		fmt.Printf("building: %v\n%s", err, out)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func pcorrun(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, filepath.Join(bin, "pcorrun"), args...)
}

func ringPath() string { return filepath.Join(bin, "ring") }

func TestRingOfFour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := pcorrun(ctx, "-n", "4", ringPath(), "-rounds", "1000").CombinedOutput()
	if err != nil {
		t.Fatalf("pcorrun: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "[0] ring of 4: 1000 rounds, 4000 hops") {
		t.Fatalf("no ring result:\n%s", out)
	}
}

// running is a pcorrun in the background whose output is read line by line.
type running struct {
	cmd   *exec.Cmd
	lines chan string
	coord string
	key   string
}

var dirLine = regexp.MustCompile(`pcorrun: directory at (\S+), job key ([0-9a-f]{16})`)

func startRing(t *testing.T, ctx context.Context, n int, ringArgs ...string) *running {
	t.Helper()
	var flags []string
	for len(ringArgs) > 0 && strings.HasPrefix(ringArgs[0], "--") {
		flags, ringArgs = append(flags, ringArgs[0]), ringArgs[1:]
	}
	cmd := pcorrun(ctx, append(append(flags, "-v", "-n", fmt.Sprint(n), ringPath()), ringArgs...)...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := &running{cmd: cmd, lines: make(chan string, 1024)}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for joined := 0; joined < n; {
		l := r.next(t, 10*time.Second)
		if m := dirLine.FindStringSubmatch(l); m != nil {
			r.coord, r.key = m[1], m[2]
		}
		if strings.Contains(l, "joined") && strings.HasPrefix(l, "[") {
			joined++
		}
	}
	return r
}

func (r *running) next(t *testing.T, within time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			t.Fatal("pcorrun output ended")
		}
		t.Log(l)
		return l
	case <-time.After(within):
		t.Fatalf("no output within %v", within)
	}
	return ""
}

// finish waits for pcorrun to end and returns its exit status and the rest
// of its output.
func (r *running) finish(t *testing.T) (int, string) {
	t.Helper()
	var rest bytes.Buffer
	for l := range r.lines {
		t.Log(l)
		rest.WriteString(l + "\n")
	}
	err := r.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), rest.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, rest.String()
}

func (r *running) joinEnv(key string) []string {
	return append(os.Environ(), "PCOR_COORD="+r.coord, "PCOR_JOBKEY="+key, "PCOR_SIZE=", "PCOR_RANK=", "PCOR_DIRECTORY=join")
}

// TestLateJoiner: a fifth process joins the running ring and exchanges a
// message with each of the four.
func TestLateJoiner(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := startRing(t, ctx, 4, "-rounds", "200", "-delay", "2ms", "-visitors", "1")
	visitor := exec.CommandContext(ctx, ringPath())
	visitor.Env = r.joinEnv(r.key)
	out, err := visitor.CombinedOutput()
	if err != nil {
		t.Fatalf("visitor: %v\n%s", err, out)
	}
	for p := 0; p < 4; p++ {
		if !strings.Contains(string(out), fmt.Sprintf("visitor 4 exchanged with %d\n", p)) {
			t.Errorf("visitor did not exchange with %d:\n%s", p, out)
		}
	}
	if code, rest := r.finish(t); code != 0 {
		t.Fatalf("pcorrun exited %d\n%s", code, rest)
	}
}

// TestWrongKeyRefused: a process with another job key is refused and the
// ring is not disturbed.
func TestWrongKeyRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := startRing(t, ctx, 4, "-rounds", "200", "-delay", "2ms")
	intruder := exec.CommandContext(ctx, ringPath())
	intruder.Env = r.joinEnv("00000000000000ff")
	out, err := intruder.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "wrong job key") {
		t.Fatalf("intruder: %v\n%s", err, out)
	}
	code, rest := r.finish(t)
	if code != 0 || !strings.Contains(rest, "[0] ring of 4: 200 rounds") {
		t.Fatalf("pcorrun exited %d\n%s", code, rest)
	}
	if strings.Contains(rest, "process 4") {
		t.Fatalf("the intruder appeared in the membership:\n%s", rest)
	}
}

// TestKillMidRun: killing one ring process gives its neighbours'
// sends and receives naming it an error that is pcor.ErrPeerDown (by
// errors.Is, in the ring process: its exit status says so) within 5 s, the
// others stop, and pcorrun fails naming it.
func TestKillMidRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := startRing(t, ctx, 4, "--keep-going", "-rounds", "100000", "-delay", "1ms")
	time.Sleep(500 * time.Millisecond)
	// The ring processes are pcorrun's children; find rank 2 by its
	// environment.
	pid := childPID(t, r.cmd.Process.Pid, "PCOR_RANK=2")
	killed := time.Now()
	syscall.Kill(pid, syscall.SIGKILL)
	code, rest := r.finish(t)
	took := time.Since(killed)
	if code == 0 || !strings.Contains(rest, "pcorrun: rank 2 was killed by signal 9") {
		t.Fatalf("pcorrun exited %d\n%s", code, rest)
	}
	// Without pcorrun stopping them, the others end on their own through
	// ErrPeerDown.
	if took > 5*time.Second {
		t.Fatalf("the others took %v after the kill to fail", took)
	}
	t.Logf("all processes ended %v after the kill", took)
	for _, p := range []int{1, 3} {
		if !strings.Contains(rest, fmt.Sprintf("pcorrun: rank %d exited with status %d", p, exitPeerDown)) {
			t.Errorf("rank %d's call naming rank 2 did not fail with ErrPeerDown:\n%s", p, rest)
		}
	}
}

// childPID finds the child of parent whose environment holds env.
func childPID(t *testing.T, parent int, env string) int {
	t.Helper()
	// Children are listed under the thread that started them.
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", parent))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("no task list for %d: %v", parent, err)
	}
	var all []string
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		all = append(all, strings.Fields(string(b))...)
	}
	for _, f := range all {
		var pid int
		fmt.Sscan(f, &pid)
		e, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err == nil && bytes.Contains(append([]byte{0}, e...), []byte("\x00"+env+"\x00")) {
			return pid
		}
	}
	t.Fatalf("no child of %d with %s", parent, env)
	return 0
}
