package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/internal/netnstest"
)

// TestRingAcrossNamespaces runs the ring in three namespaces joined by a
// bridge, the directory on the bridge's address in a fourth: every process
// opens its UDP port on the address that routes to the directory.
func TestRingAcrossNamespaces(t *testing.T) {
	hub, hosts := netnstest.Hub(t, "rng", "10.232.0", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", hub, bin+"/pcorrun",
		"--listen", "10.232.0.1:0", "--hosts", strings.Join(hosts, ","), "--via", "ip netns exec {host}",
		"-n", "3", ringPath(), "-rounds", "1000").CombinedOutput()
	if err != nil {
		t.Fatalf("pcorrun: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "[0] ring of 3: 1000 rounds, 3000 hops") {
		t.Fatalf("no ring result:\n%s", out)
	}
	t.Logf("%s", out)
}
