package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// hubNetns creates a hub namespace with a bridge at 10.232.0.1/24 and
// hosts namespaces attached to it (10.232.0.11, .12, ...). Everything is
// removed at cleanup, also when the test fails.
func hubNetns(t *testing.T, hosts int) (string, []string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command")
	}
	prefix := fmt.Sprintf("rng%d", os.Getpid())
	hub := prefix + "hub"
	var names []string
	t.Cleanup(func() {
		for _, ns := range append(names, hub) {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", hub)
	ip("-n", hub, "link", "set", "lo", "up")
	ip("-n", hub, "link", "add", "br0", "type", "bridge")
	ip("-n", hub, "addr", "add", "10.232.0.1/24", "dev", "br0")
	ip("-n", hub, "link", "set", "br0", "up")
	for i := 0; i < hosts; i++ {
		ns := fmt.Sprintf("%sh%d", prefix, i)
		ip("netns", "add", ns)
		names = append(names, ns)
		v := fmt.Sprintf("v%d", i)
		ip("-n", hub, "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", ns)
		ip("-n", hub, "link", "set", v, "master", "br0", "up")
		ip("-n", ns, "addr", "add", fmt.Sprintf("10.232.0.%d/24", 11+i), "dev", "eth0")
		ip("-n", ns, "link", "set", "eth0", "up")
		ip("-n", ns, "link", "set", "lo", "up")
	}
	return hub, names
}

// TestRingAcrossNamespaces runs the ring in three namespaces joined by a
// bridge, the directory on the bridge's address in a fourth: every process
// opens its UDP port on the address that routes to the directory.
func TestRingAcrossNamespaces(t *testing.T) {
	hub, hosts := hubNetns(t, 3)
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
