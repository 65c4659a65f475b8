package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// guard runs script after sourcing rdma-guard.sh in sh (the guest's is
// busybox ash) and returns its output and exit status.
func guard(t *testing.T, script string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", ". ./rdma-guard.sh\n"+script)
	// Not in the guest: no sysrq, no kernel log.
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin"}
	// A child left running holds the output pipe open.
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("sh: %v\n%s", err, out)
	}
	if ctx.Err() != nil {
		t.Fatalf("the guarded script outlived 3 minutes:\n%s", out)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestRDMAGuard: bounded, which each bench command in the soft-RoCE guest
// runs under, returns a command's own status, and ends a command (and its
// children) that outlives its bound with status 124, reporting the hang.
func TestRDMAGuard(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	out, rc := guard(t, "bounded 60 sh -c 'exit 3'; echo rc=$?")
	if !strings.Contains(out, "rc=3") || strings.Contains(out, "timed out") {
		t.Fatalf("a command that ends in time: %q, %d", out, rc)
	}
	// A hung command with a hung child: both end.
	out, _ = guard(t, `bounded 2 sh -c 'sleep 600 & echo child=$!; wait'; echo rc=$?`)
	if !strings.Contains(out, "!!! timed out after 2 s") || !strings.Contains(out, "rc=124") || !strings.Contains(out, "### guard: kernel stack of") {
		t.Fatalf("a hung command:\n%s", out)
	}
	var child int
	for _, l := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(l, "child="); ok {
			child, _ = strconv.Atoi(strings.TrimSpace(n))
		}
	}
	if child == 0 {
		t.Fatalf("no child pid in:\n%s", out)
	}
	// Dead, or a zombie its new parent has yet to reap.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
		if err != nil {
			break
		}
		if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
			break
		}
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the hung command's child %d outlived it: %s", child, st)
		}
	}
}
