package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/internal/netnstest"
)

// TestNetnsVia starts pcorrun in a hub namespace with its directory on the
// bridge address, and three processes in three other namespaces through
// --via 'ip netns exec {host}'; each joins the directory across the bridge.
func TestNetnsVia(t *testing.T) {
	hub, hosts := netnstest.Hub(t, "pcr", "10.231.0", 3)
	cmd := exec.Command("ip", "netns", "exec", hub, os.Args[0],
		"--listen", "10.231.0.1:0", "--hosts", strings.Join(hosts, ","),
		"--via", "ip netns exec {host}", "-n", "6", "-v", os.Args[0])
	cmd.Env = append(os.Environ(), pcorrunMain+"=1", helperMode+"=join")
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	}()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pcorrun: %v\n%s", err, out)
	}
	for r := 0; r < 6; r++ {
		if !strings.Contains(string(out), fmt.Sprintf("[%d] proc %d sees 6 members from 10.231.0.%d\n", r, r, 11+r%3)) {
			t.Errorf("rank %d did not see everyone:\n%s", r, out)
		}
		if !strings.Contains(string(out), fmt.Sprintf("process %d on", r)) {
			t.Errorf("no membership line for rank %d:\n%s", r, out)
		}
	}
}
