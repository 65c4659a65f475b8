package pcor_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// idleWindow is how long an idle node's CPU use is measured.
const idleWindow = 5 * time.Second

// cpuTime is the user plus system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// idlePeer is process 1 of TestIdleNodeCPU: a blocking-mode node that
// exchanges one message with process 0, then has a thread blocked in Recv
// for idleWindow with nothing arriving, and prints the CPU time the
// process used over that window.
func idlePeer() int {
	n := peerNode("")
	if n == nil {
		return 1
	}
	defer n.Close()
	th := n.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	peer := pcor.Addr{Proc: 0, Thread: 0}
	if _, err := th.Recv(ctx, peer, 1); err != nil {
		fmt.Fprintln(os.Stderr, "idle:", err)
		return 1
	}
	if err := th.Send(ctx, peer, 1, []byte("back")); err != nil {
		fmt.Fprintln(os.Stderr, "idle:", err)
		return 1
	}
	// Let the exchange's acknowledgements and timers settle.
	time.Sleep(200 * time.Millisecond)
	before := cpuTime()
	wait, cancelWait := context.WithTimeout(ctx, idleWindow)
	defer cancelWait()
	_, err := th.Recv(wait, peer, 2)
	used := cpuTime() - before
	if err == nil {
		fmt.Fprintln(os.Stderr, "idle: a message came")
		return 1
	}
	fmt.Printf("CPU %d\n", used.Nanoseconds())
	return 0
}

// An idle blocking-mode node, with a thread blocked in Recv, uses less than
// 1% of a CPU (getrusage over 5 s, in a process of its own).
func TestIdleNodeCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 5 s of idling")
	}
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cmd, out := startPeer(t, "idle", n, pcor.Peer{Proc: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	th := n.NewThread()
	peer := pcor.Addr{Proc: 1, Thread: 0}
	if err := th.Send(ctx, peer, 1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := th.Recv(ctx, peer, 1); err != nil {
		t.Fatal(err)
	}
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "CPU ") {
		t.Fatalf("peer: %q %v", line, err)
	}
	ns, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "CPU ")), 10, 64)
	used := time.Duration(ns)
	t.Logf("idle for %v: %v of CPU (%.3f%%)", idleWindow, used, 100*used.Seconds()/idleWindow.Seconds())
	if used > idleWindow/100 {
		t.Errorf("an idle node used %v of CPU in %v (more than 1%%)", used, idleWindow)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("peer: %v", err)
	}
}
