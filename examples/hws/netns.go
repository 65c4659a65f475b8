package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// topology is a set of network namespaces: a gateway namespace holding one
// bridge per group, and one namespace per process attached to its group's
// bridge. The gateway routes between the groups; the egress of each bridge
// in the gateway (what crosses from one group to another) can be shaped
// with tc tbf: that is the slow link.
type topology struct {
	gw    string
	procs []string // namespace of each process, by rank
	ips   []string
	nets  int
}

// needNamespaces reports why namespaces cannot be made here, or "".
func needNamespaces() string {
	if os.Geteuid() != 0 {
		return "needs root to create network namespaces"
	}
	for _, cmd := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return "needs the " + cmd + " command (iproute2)"
		}
	}
	return ""
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newTopology makes groups of per processes; rate, if not empty, shapes
// the link between groups (a tc rate such as "4mbit"). Names start with
// prefix and this process's id. Close removes everything.
func newTopology(prefix string, groups, per int, rate string) (tp *topology, err error) {
	prefix = fmt.Sprintf("%s%d", prefix, os.Getpid())
	tp = &topology{gw: prefix + "gw", nets: groups}
	defer func() {
		if err != nil {
			tp.Close()
		}
	}()
	ns := func(n string, args ...string) error { return ipCmd(append([]string{"-n", n}, args...)...) }
	if err := ipCmd("netns", "add", tp.gw); err != nil {
		return tp, err
	}
	steps := [][]string{{"link", "set", "lo", "up"}}
	for g := range groups {
		br := fmt.Sprintf("br%d", g)
		steps = append(steps, []string{"link", "add", br, "type", "bridge"},
			[]string{"addr", "add", fmt.Sprintf("10.77.%d.1/24", g), "dev", br},
			[]string{"link", "set", br, "up"})
	}
	for _, s := range steps {
		if err := ns(tp.gw, s...); err != nil {
			return tp, err
		}
	}
	if out, err := exec.Command("ip", "netns", "exec", tp.gw, "sysctl", "-qw", "net.ipv4.ip_forward=1").CombinedOutput(); err != nil {
		return tp, fmt.Errorf("ip_forward: %v: %s", err, out)
	}
	if rate != "" && groups > 1 {
		for g := range groups {
			out, err := exec.Command("ip", "netns", "exec", tp.gw, "tc", "qdisc", "add", "dev", fmt.Sprintf("br%d", g),
				"root", "tbf", "rate", rate, "burst", "16kb", "latency", "400ms").CombinedOutput()
			if err != nil {
				return tp, fmt.Errorf("tc tbf: %v: %s", err, out)
			}
		}
	}
	for g := range groups {
		for j := range per {
			i := len(tp.procs)
			name := fmt.Sprintf("%sp%d", prefix, i)
			if err := ipCmd("netns", "add", name); err != nil {
				return tp, err
			}
			tp.procs = append(tp.procs, name)
			ip := fmt.Sprintf("10.77.%d.%d", g, 11+j)
			tp.ips = append(tp.ips, ip)
			v := fmt.Sprintf("v%d", i)
			for _, s := range [][]string{
				{"-n", tp.gw, "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", name},
				{"-n", tp.gw, "link", "set", v, "master", fmt.Sprintf("br%d", g), "up"},
				{"-n", name, "addr", "add", ip + "/24", "dev", "eth0"},
				{"-n", name, "link", "set", "eth0", "up"},
				{"-n", name, "link", "set", "lo", "up"},
				{"-n", name, "route", "add", "default", "via", fmt.Sprintf("10.77.%d.1", g)},
			} {
				if err := ipCmd(s...); err != nil {
					return tp, err
				}
			}
		}
	}
	return tp, nil
}

// wideBytes is the number of bytes the gateway has sent into the groups'
// networks: what crossed from one group to another.
func (tp *topology) wideBytes() (uint64, error) {
	var sum uint64
	for g := range tp.nets {
		out, err := exec.Command("ip", "netns", "exec", tp.gw, "cat", fmt.Sprintf("/sys/class/net/br%d/statistics/tx_bytes", g)).Output()
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// Close removes the namespaces (idempotent).
func (tp *topology) Close() error {
	var errs []error
	for _, n := range append(tp.procs, tp.gw) {
		if n == "" {
			continue
		}
		if err := ipCmd("netns", "del", n); err != nil && !strings.Contains(err.Error(), "No such file") {
			errs = append(errs, err)
		}
	}
	tp.procs, tp.gw = nil, ""
	return errors.Join(errs...)
}
