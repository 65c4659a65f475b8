package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pcor-go/pcor/internal/cpuquota"
)

func TestParseCPUShares(t *testing.T) {
	got, err := parseCPUShares("1=100, 2=50%,3=25")
	if err != nil || len(got) != 3 || got[1] != 1 || got[2] != 0.5 || got[3] != 0.25 {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"1", "x=5", "1=0", "-1=5", "1=-3", "1=5,,"} {
		if _, err := parseCPUShares(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if m, err := parseCPUShares(""); m != nil || err != nil {
		t.Errorf("empty: %v %v", m, err)
	}
}

// pcorrun --cpu-share puts each listed rank in its own cgroup with its
// quota, and removes the groups when the run ends.
func TestCPUShareFlag(t *testing.T) {
	if err := cpuquota.Available(); err != nil {
		t.Skipf("cannot set CPU quotas here: %v", err)
	}
	cmd, sc := startPcorrun(t, "wait", "-n", "3", "--cpu-share", "1=50,2=25")
	for ready := 0; ready < 3; {
		if !sc.Scan() {
			t.Fatalf("pcorrun ended before its processes were ready: %v", sc.Err())
		}
		if strings.HasSuffix(sc.Text(), "ready") {
			ready++
		}
	}
	dir := "/sys/fs/cgroup/cpu"
	if os.Getenv(cpuquota.EnvRoot) != "" {
		dir = filepath.Join(os.Getenv(cpuquota.EnvRoot), "cpu")
	}
	group := func(rank int) string {
		return filepath.Join(dir, fmt.Sprintf("pcorrun-%d-rank%d", cmd.Process.Pid, rank))
	}
	for rank, quota := range map[int]string{1: "5000", 2: "2500"} {
		procs, err := os.ReadFile(filepath.Join(group(rank), "cgroup.procs"))
		if err != nil || len(strings.Fields(string(procs))) == 0 {
			t.Errorf("rank %d: no process in its group: %q %v", rank, procs, err)
		}
		q, _ := os.ReadFile(filepath.Join(group(rank), "cpu.cfs_quota_us"))
		if strings.TrimSpace(string(q)) != quota {
			t.Errorf("rank %d: quota %q, want %s", rank, q, quota)
		}
	}
	if _, err := os.Stat(group(0)); err == nil {
		t.Error("rank 0 has a group without a share")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	for _, rank := range []int{1, 2} {
		if _, err := os.Stat(group(rank)); err == nil {
			t.Errorf("group of rank %d left behind", rank)
		}
	}
	if code, _, errs := runHelper(t, "env", "-n", "2", "--cpu-share", "5=50"); code == 0 || !strings.Contains(errs, "rank 5") {
		t.Errorf("share for a rank beyond -n: exit %d, %s", code, errs)
	}
}
