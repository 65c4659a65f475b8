package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/internal/netnstest"
)

// churnThreads makes the test binary, acting as pcorrun, end OS threads
// all the time: goroutines that lock their thread and return take it with
// them. A process whose parent-death signal is tied to a thread that ends
// is killed although pcorrun lives.
const churnThreads = "PCORRUN_TEST_CHURN"

func churn() {
	for {
		done := make(chan struct{})
		for i := 0; i < 4; i++ {
			go func() {
				runtime.LockOSThread()
				done <- struct{}{}
			}()
		}
		for i := 0; i < 4; i++ {
			<-done
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// strayBound is how long a process may outlive a killed pcorrun. A --via
// process's watchdog gives it 1 s between SIGTERM and SIGKILL, and on a
// loaded machine the watchdog shell itself waits for a CPU to notice the
// closed pipe and to start its sleep: a bound of 2 s was passed at load 17.
// A process that escaped would live on for good, so the bound only needs to
// be finite.
const strayBound = 10 * time.Second

// noStrays starts pcorrun with args and n processes that ignore SIGINT,
// SIGTERM and SIGHUP, lets pcorrun's threads come and go for a second
// (the processes must survive that), kills pcorrun with SIGKILL and wants
// every process gone within strayBound.
func noStrays(t *testing.T, n int, args ...string) {
	t.Helper()
	// pcorrun unsets it before it starts the processes.
	t.Setenv(churnThreads, "1")
	cmd, sc := startPcorrun(t, "stubborn", append([]string{"-n", strconv.Itoa(n)}, args...)...)
	var pids []int
	t.Cleanup(func() {
		for _, pid := range pids {
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	for len(pids) < n && sc.Scan() {
		var rank, pid int
		if _, err := fmt.Sscanf(sc.Text(), "[%d] pid %d", &rank, &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	if len(pids) < n {
		t.Fatalf("only %d of %d processes started: %v", len(pids), n, sc.Err())
	}
	time.Sleep(time.Second)
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d died while pcorrun lives", pid)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	killed := time.Now()
	for time.Since(killed) < strayBound {
		live := 0
		for _, pid := range pids {
			if alive(pid) {
				live++
			}
		}
		if live == 0 {
			t.Logf("all %d processes gone %v after pcorrun was killed", n, time.Since(killed).Round(time.Millisecond))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d outlived pcorrun by %v", pid, strayBound)
		}
	}
}

// Processes started here end when pcorrun is killed with SIGKILL.
func TestKilledLauncherLocal(t *testing.T) {
	noStrays(t, 3)
}

// Processes started through --via 'ip netns exec {host}' end when pcorrun
// is killed with SIGKILL.
func TestKilledLauncherNetns(t *testing.T) {
	_, hosts := netnstest.Hub(t, "pcs", "10.232.0", 2)
	noStrays(t, 4, "--hosts", strings.Join(hosts, ","), "--via", "ip netns exec {host}")
}

// A --via command that puts the process out of pcorrun's reach, as ssh
// does (here: in a new session, forked off), still ends it when pcorrun is
// killed: the watchdog sees its standard input close.
func TestKilledLauncherDetached(t *testing.T) {
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("needs setsid (util-linux)")
	}
	noStrays(t, 3, "--via", "setsid -w")
}
