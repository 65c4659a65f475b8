// Package cpuquota limits processes to a share of one CPU with a Linux
// cgroup: cgroup v1's cpu controller (cpu.cfs_quota_us over
// cpu.cfs_period_us) or cgroup v2's cpu.max, whichever is mounted. It makes
// workers of different speeds on one machine.
package cpuquota

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// EnvRoot overrides where the cgroup hierarchy is looked for (default
// /sys/fs/cgroup).
const EnvRoot = "PCOR_CGROUP_ROOT"

// Period is the accounting period of the quotas made here: short, so that
// a throttled process runs in short slices rather than long bursts.
const Period = 10 * time.Millisecond

// ErrUnavailable is returned when no writable cpu controller is mounted.
var ErrUnavailable = errors.New("cpuquota: no writable cgroup cpu controller")

type hierarchy struct {
	dir string // where groups are made
	v2  bool
}

func root() string {
	if r := os.Getenv(EnvRoot); r != "" {
		return r
	}
	return "/sys/fs/cgroup"
}

// find locates the cpu controller: v1 at <root>/cpu, v2 at <root> (the
// unified hierarchy) with cpu among its controllers.
func find() (hierarchy, error) {
	r := root()
	if _, err := os.Stat(filepath.Join(r, "cpu", "cpu.cfs_quota_us")); err == nil {
		return hierarchy{dir: filepath.Join(r, "cpu")}, nil
	}
	for _, d := range []string{r, filepath.Join(r, "unified")} {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.controllers"))
		if err == nil && containsWord(string(b), "cpu") {
			return hierarchy{dir: d, v2: true}, nil
		}
	}
	return hierarchy{}, ErrUnavailable
}

func containsWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// Available reports why quotas cannot be set here (nil when they can):
// no cpu controller, or no permission to make a group.
func Available() error {
	g, err := New(fmt.Sprintf("pcor-probe-%d", os.Getpid()), 1)
	if err != nil {
		return err
	}
	return g.Close()
}

// Group is a cgroup with a CPU quota.
type Group struct {
	path string
	v2   bool
}

// New makes a group called name limited to share of one CPU (0.25: a
// quarter; shares above 1 allow several CPUs).
func New(name string, share float64) (*Group, error) {
	if !(share > 0) || share > 1024 {
		return nil, fmt.Errorf("cpuquota: share %g out of range", share)
	}
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("cpuquota: bad group name %q", name)
	}
	h, err := find()
	if err != nil {
		return nil, err
	}
	g := &Group{path: filepath.Join(h.dir, name), v2: h.v2}
	if h.v2 {
		// The cpu controller must be enabled for the children.
		sc := filepath.Join(h.dir, "cgroup.subtree_control")
		if b, err := os.ReadFile(sc); err == nil && !containsWord(string(b), "cpu") {
			if err := os.WriteFile(sc, []byte("+cpu"), 0); err != nil {
				return nil, fmt.Errorf("%w: enabling cpu: %v", ErrUnavailable, err)
			}
		}
	}
	if err := os.Mkdir(g.path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	period := Period.Microseconds()
	quota := max(int64(share*float64(period)), 1000)
	if g.v2 {
		err = g.write("cpu.max", fmt.Sprintf("%d %d", quota, period))
	} else {
		// The period first: a quota above the old period is valid only
		// after it.
		err = errors.Join(g.write("cpu.cfs_period_us", strconv.FormatInt(period, 10)),
			g.write("cpu.cfs_quota_us", strconv.FormatInt(quota, 10)))
	}
	if err != nil {
		os.Remove(g.path)
		return nil, err
	}
	return g, nil
}

func (g *Group) write(file, v string) error {
	if err := os.WriteFile(filepath.Join(g.path, file), []byte(v), 0); err != nil {
		return fmt.Errorf("cpuquota: %s: %w", file, err)
	}
	return nil
}

// Path is the group's directory.
func (g *Group) Path() string { return g.path }

// Add moves process pid (with its threads) into the group; its children
// started afterwards are in it too.
func (g *Group) Add(pid int) error {
	return g.write("cgroup.procs", strconv.Itoa(pid))
}

// Throttled returns how long the group's processes were kept off the CPU
// by the quota so far.
func (g *Group) Throttled() (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(g.path, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "throttled_time": // v1, ns
			return time.Duration(v), nil
		case "throttled_usec": // v2
			return time.Duration(v) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("cpuquota: no throttled time in %s/cpu.stat", g.path)
}

// Close moves any process still in the group to the parent group and
// removes the group. It is idempotent.
func (g *Group) Close() error {
	if b, err := os.ReadFile(filepath.Join(g.path, "cgroup.procs")); err == nil {
		parent := filepath.Join(filepath.Dir(g.path), "cgroup.procs")
		for _, pid := range strings.Fields(string(b)) {
			os.WriteFile(parent, []byte(pid), 0) // an exited process is gone already
		}
	}
	var err error
	for range 50 {
		err = os.Remove(g.path)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(10 * time.Millisecond) // a process moved out may linger
	}
	return fmt.Errorf("cpuquota: %w", err)
}
