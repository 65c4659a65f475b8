package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// loops is how many times each way of starting a job is run. CI runs the
// test again on its own with -loops 300 (.ci/launchers.sh): a defect
// failing 1% of runs passes all 300 with probability 0.99^300 < 5%.
var loops = flag.Int("loops", 20, "runs of each way of starting a job in TestStartExitLoop")

// TestStartExitLoop starts a small ring and lets it exit in order, again
// and again, with zero failures allowed: under pcorrun (the directory
// outside the job), and started by hand with rank 0 serving the directory
// (which must outlive every other member's leave). Messages that arrived
// before their sender left must still be received.
func TestStartExitLoop(t *testing.T) {
	runs := *loops
	for _, c := range []struct {
		name string
		run  func(ctx context.Context) ([]byte, error)
	}{
		{"pcorrun", func(ctx context.Context) ([]byte, error) {
			cmd := pcorrun(ctx, "-n", "4", ringPath(), "-rounds", "10")
			dumpOnCancel(cmd)
			return cmd.CombinedOutput()
		}},
		{"embedded directory", func(ctx context.Context) ([]byte, error) {
			return embeddedRing(ctx, 4, "-rounds", "10")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var next, failed atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for w := 0; w < 2; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(runs) {
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						out, err := c.run(ctx)
						cancel()
						if err == nil && !strings.Contains(string(out), "ring of 4: 10 rounds, 40 hops") {
							err = fmt.Errorf("no ring result")
						}
						if err != nil {
							if failed.Add(1) <= 3 {
								t.Errorf("%v\n%s", err, out)
							}
						}
					}
				}()
			}
			wg.Wait()
			t.Logf("%d runs, %d failed, in %v", runs, failed.Load(), time.Since(start).Round(time.Millisecond))
			if n := failed.Load(); n > 0 {
				t.Fatalf("%d of %d runs failed", n, runs)
			}
		})
	}
}

// embeddedRing starts n ring processes with their ranks, the size, a job
// key of their own (jobs running at once must not take each other's
// datagrams for their own) and a free local directory address, and no
// directory: rank 0 serves it. It returns their output, and the first
// failure.
func embeddedRing(ctx context.Context, n int, args ...string) ([]byte, error) {
	coord, err := freeCoord()
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%016x", rand.Uint64())
	var out lockedBuffer
	cmds := make([]*exec.Cmd, n)
	for r := range cmds {
		cmd := exec.CommandContext(ctx, ringPath(), args...)
		dumpOnCancel(cmd)
		cmd.Env = append(os.Environ(), "PCOR_COORD="+coord, "PCOR_JOBKEY="+key,
			fmt.Sprintf("PCOR_RANK=%d", r), fmt.Sprintf("PCOR_SIZE=%d", n), "PCOR_DIRECTORY=")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return out.Bytes(), err
		}
		cmds[r] = cmd
	}
	var first error
	for r, cmd := range cmds {
		if err := cmd.Wait(); err != nil && first == nil {
			first = fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return out.Bytes(), first
}

// freeCoord is a local TCP address nobody listens on, for a directory that
// rank 0 serves. Its port is below the range the kernel takes local ports
// of outgoing connections from (a port from that range, free when looked
// at, may be an outgoing connection's by the time rank 0 listens: rank 0
// then takes the directory for served by another and only joins, and the
// run fails with every join refused).
func freeCoord() (string, error) {
	low := 32768 // Linux's default first ephemeral port
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		fmt.Sscan(string(b), &low)
	}
	if low > 2048 {
		for range 100 {
			addr := fmt.Sprintf("127.0.0.1:%d", 1024+rand.IntN(low-1024))
			if ln, err := net.Listen("tcp", addr); err == nil {
				ln.Close()
				return addr, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// dumpOnCancel makes a run that outlives its context print where it
// stands before it is killed: the process and its children (the ranks
// pcorrun started) get SIGQUIT, so a Go program prints every goroutine's
// stack, and are killed if they have not exited 10 s later.
func dumpOnCancel(cmd *exec.Cmd) {
	cmd.Cancel = func() error {
		for _, child := range childrenOf(cmd.Process.Pid) {
			syscall.Kill(child, syscall.SIGQUIT)
		}
		time.Sleep(2 * time.Second) // the children's stacks before pcorrun's
		return cmd.Process.Signal(syscall.SIGQUIT)
	}
	cmd.WaitDelay = 10 * time.Second
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		var state string
		var child, ppid int
		if _, err := fmt.Sscanf(string(b[i+1:]), " %s %d", &state, &ppid); err != nil || ppid != pid {
			continue
		}
		if _, err := fmt.Sscanf(string(b), "%d", &child); err == nil {
			kids = append(kids, child)
		}
	}
	return kids
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b...)
}
