package cpuquota

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestQuotaThrottles(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("cannot set CPU quotas here: %v", err)
	}
	g, err := New(fmt.Sprintf("pcor-test-%d", os.Getpid()), 0.25)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	// A busy shell loop in the group for 400 ms of wall time.
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(g.Path(), "cgroup.procs"))
	if err != nil || !strings.Contains(string(b), fmt.Sprint(cmd.Process.Pid)) {
		t.Fatalf("process not in the group: %q %v", b, err)
	}
	// The kernel places the process in the group: /proc/<pid>/cgroup names it.
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
	if err != nil || !strings.Contains(string(b), "/"+filepath.Base(g.Path())+"\n") {
		t.Fatalf("/proc/%d/cgroup: %q %v", cmd.Process.Pid, b, err)
	}
	const wall = 500 * time.Millisecond
	time.Sleep(wall)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// A quarter of a CPU: the loop got at most about 125 ms of CPU time
	// (unthrottled on an idle machine it takes nearly all 500 ms of one
	// CPU; on a loaded one contention may keep it below the quota anyway,
	// so this bound is the property, not the throttling count).
	used := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if used > 200*time.Millisecond {
		t.Fatalf("the loop used %v of CPU in %v at a 25%% quota", used, wall)
	}
	d, err := g.Throttled()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loop used %v of CPU in %v; throttled %v", used, wall, d)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Path()); !os.IsNotExist(err) {
		t.Fatalf("group left behind: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestBadArguments(t *testing.T) {
	for _, c := range []struct {
		name  string
		share float64
	}{{"x", 0}, {"x", -1}, {"a/b", 0.5}, {"..", 0.5}, {"", 0.5}} {
		if _, err := New(c.name, c.share); err == nil {
			t.Errorf("New(%q, %g) accepted", c.name, c.share)
		}
	}
}

// A v2 hierarchy is written as cpu.max "quota period" (checked on a fake
// hierarchy: the directory layout is all the package looks at).
func TestV2Layout(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpuset cpu io memory"), 0o644)
	os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(""), 0o644)
	t.Setenv(EnvRoot, dir)
	g, err := New("w1", 0.5)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(g.Path(), "cpu.max"))
	if string(b) != "5000 10000" {
		t.Fatalf("cpu.max = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); string(b) != "+cpu" {
		t.Fatalf("subtree_control = %q", b)
	}
	os.WriteFile(filepath.Join(g.Path(), "cpu.stat"), []byte("usage_usec 10\nthrottled_usec 1500\n"), 0o644)
	if d, err := g.Throttled(); err != nil || d != 1500*time.Microsecond {
		t.Fatalf("throttled %v %v", d, err)
	}
}
