package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/internal/cpuquota"
)

// cgroupHelper makes the test binary, started by pcorrun, print the cpu
// cgroup it runs in: ranks listed in the variable wait (5 s at most) to be
// moved into a group first.
const cgroupHelper = "PCORRUN_TEST_CGROUP"

func init() {
	want := os.Getenv(cgroupHelper)
	if want == "" || os.Getenv("PCOR_RANK") == "" {
		return
	}
	rank := os.Getenv("PCOR_RANK")
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/self/cgroup")
		line := cpuLine(string(b))
		if !strings.Contains(","+want+",", ","+rank+",") || strings.Contains(line, "-rank"+rank) || time.Now().After(deadline) {
			fmt.Printf("cgroup %s\n", line)
			os.Exit(0)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func cpuLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && (strings.Contains(","+f[1]+",", ",cpu,") || f[1] == "") {
			return f[2]
		}
	}
	return ""
}

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

// pcorrun --cpu-share puts each listed rank in its own cgroup, and removes
// the groups when the run ends.
func TestCPUShareFlag(t *testing.T) {
	if err := cpuquota.Available(); err != nil {
		t.Skipf("cannot set CPU quotas here: %v", err)
	}
	t.Setenv(cgroupHelper, "1,2")
	code, out, errs := runHelper(t, "env", "-n", "3", "--cpu-share", "1=50,2=25")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for rank, want := range []string{"", "-rank1", "-rank2"} {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, fmt.Sprintf("[%d] cgroup ", rank)) {
				line = l
			}
		}
		if line == "" || (want == "") != !strings.Contains(line, "pcorrun-") || !strings.Contains(line, want) {
			t.Errorf("rank %d: %q, want a group ending %q\n%s", rank, line, want, out)
		}
	}
	if m, _ := os.ReadDir("/sys/fs/cgroup/cpu"); m != nil {
		for _, e := range m {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("pcorrun-%d-", os.Getpid())) {
				t.Errorf("group %s left behind", e.Name())
			}
		}
	}
	if code, _, errs := runHelper(t, "env", "-n", "2", "--cpu-share", "5=50"); code == 0 || !strings.Contains(errs, "rank 5") {
		t.Errorf("share for a rank beyond -n: exit %d, %s", code, errs)
	}
}
