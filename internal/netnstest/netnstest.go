// Package netnstest builds network namespaces for tests: a hub namespace
// with a bridge and host namespaces attached to it. Everything a test makes
// is removed when the test ends, also when it fails. Tests skip with a
// reason where namespaces cannot be made (not root, no iproute2).
package netnstest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Require skips t unless network namespaces can be made here.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
}

// IP runs the ip command and fails t with its output on error.
func IP(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Hub creates a hub namespace holding a bridge at subnet.1/24 (subnet is
// three octets, e.g. "10.231.0") and hosts namespaces attached to it at
// subnet.11, .12, ... It returns the hub's name and the hosts' names, all
// starting with prefix and the process id.
func Hub(t testing.TB, prefix, subnet string, hosts int) (string, []string) {
	t.Helper()
	Require(t)
	prefix = fmt.Sprintf("%s%d", prefix, os.Getpid())
	hub := prefix + "hub"
	var names []string
	t.Cleanup(func() {
		for _, ns := range append(names, hub) {
			exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	IP(t, "netns", "add", hub)
	IP(t, "-n", hub, "link", "set", "lo", "up")
	IP(t, "-n", hub, "link", "add", "br0", "type", "bridge")
	IP(t, "-n", hub, "addr", "add", subnet+".1/24", "dev", "br0")
	IP(t, "-n", hub, "link", "set", "br0", "up")
	for i := 0; i < hosts; i++ {
		ns := fmt.Sprintf("%sh%d", prefix, i)
		IP(t, "netns", "add", ns)
		names = append(names, ns)
		v := fmt.Sprintf("v%d", i)
		IP(t, "-n", hub, "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", ns)
		IP(t, "-n", hub, "link", "set", v, "master", "br0", "up")
		IP(t, "-n", ns, "addr", "add", fmt.Sprintf("%s.%d/24", subnet, 11+i), "dev", "eth0")
		IP(t, "-n", ns, "link", "set", "eth0", "up")
		IP(t, "-n", ns, "link", "set", "lo", "up")
	}
	return hub, names
}
