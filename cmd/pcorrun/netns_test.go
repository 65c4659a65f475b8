package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// hubNetns creates a hub namespace holding a bridge at 10.231.0.1/24 and
// hosts namespaces attached to it at 10.231.0.11, .12, ...; it returns the
// hub's name and the hosts' names. Everything is removed at cleanup, also
// when the test fails.
func hubNetns(t *testing.T, hosts int) (string, []string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command")
	}
	prefix := fmt.Sprintf("pcr%d", os.Getpid())
	hub := prefix + "hub"
	var names []string
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		for _, ns := range append(names, hub) {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	ip("netns", "add", hub)
	ip("-n", hub, "link", "set", "lo", "up")
	ip("-n", hub, "link", "add", "br0", "type", "bridge")
	ip("-n", hub, "addr", "add", "10.231.0.1/24", "dev", "br0")
	ip("-n", hub, "link", "set", "br0", "up")
	for i := 0; i < hosts; i++ {
		ns := fmt.Sprintf("%sh%d", prefix, i)
		ip("netns", "add", ns)
		names = append(names, ns)
		v := fmt.Sprintf("v%d", i)
		ip("-n", hub, "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", ns)
		ip("-n", hub, "link", "set", v, "master", "br0", "up")
		ip("-n", ns, "addr", "add", fmt.Sprintf("10.231.0.%d/24", 11+i), "dev", "eth0")
		ip("-n", ns, "link", "set", "eth0", "up")
		ip("-n", ns, "link", "set", "lo", "up")
	}
	return hub, names
}

// TestNetnsVia starts pcorrun in a hub namespace with its directory on the
// bridge address, and three processes in three other namespaces through
// --via 'ip netns exec {host}'; each joins the directory across the bridge.
func TestNetnsVia(t *testing.T) {
	hub, hosts := hubNetns(t, 3)
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
