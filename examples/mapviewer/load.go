package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pcor-go/pcor/examples/internal/loadavg"
)

// loadMeter measures how busy the machine was between start and stop:
// the CPU time of every process (from /proc/stat), the part this process
// and its waited-for children took (getrusage), and the load average.
// The machine is shared, so a figure is only worth its load line.
type loadMeter struct {
	start   time.Time
	busy0   float64 // CPU seconds busy on the whole machine
	own0    float64 // CPU seconds of this process and its children
	loadavg string
}

// Load is what a loadMeter measured.
type Load struct {
	Wall               time.Duration
	CPUs               int
	Busy, Own          float64 // CPU seconds
	LoadAvg0, LoadAvg1 string  // 1-minute load average at start and stop
	OK                 bool    // /proc/stat was readable
}

func startLoad() *loadMeter {
	b, _ := machineBusy()
	return &loadMeter{start: time.Now(), busy0: b, own0: ownCPU(), loadavg: loadavg.Field()}
}

func (m *loadMeter) stop() Load {
	b, ok := machineBusy()
	return Load{Wall: time.Since(m.start), CPUs: runtime.NumCPU(), Busy: b - m.busy0, Own: ownCPU() - m.own0,
		LoadAvg0: m.loadavg, LoadAvg1: loadavg.Field(), OK: ok}
}

// String is "41.2 s; 2 CPUs 96% busy (this run 71%, other work 25%); load average 3.1 -> 4.0".
func (l Load) String() string {
	if !l.OK || l.Wall <= 0 {
		return fmt.Sprintf("%.1f s; load average %s -> %s", l.Wall.Seconds(), l.LoadAvg0, l.LoadAvg1)
	}
	capacity := l.Wall.Seconds() * float64(l.CPUs)
	pct := func(v float64) float64 { return 100 * v / capacity }
	return fmt.Sprintf("%.1f s; %d CPUs %.0f%% busy (this run %.0f%%, other work %.0f%%); load average %s -> %s",
		l.Wall.Seconds(), l.CPUs, pct(l.Busy), pct(l.Own), max(0, pct(l.Busy-l.Own)), l.LoadAvg0, l.LoadAvg1)
}

// machineBusy is the CPU seconds all CPUs spent not idle since boot.
func machineBusy() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, false
	}
	var total, idle float64
	for i, s := range f[1:] {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, false
		}
		if i >= 8 { // guest time is already counted in user time
			break
		}
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return (total - idle) / 100, true // USER_HZ is 100 on Linux
}

// ownCPU is the CPU seconds of this process and the children it waited for.
func ownCPU() float64 {
	var sum float64
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			sum += tv(ru.Utime) + tv(ru.Stime)
		}
	}
	return sum
}

// selfCPU is the CPU seconds of this process alone.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return tv(ru.Utime) + tv(ru.Stime)
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// peersCPU is the CPU seconds of the other processes of this machine
// that belong to the same pcor application (the same PCOR_JOBKEY in their
// environment): the daemons the viewer shares the machine with.
func peersCPU() float64 {
	var sum float64
	for _, dir := range peerDirs() {
		st, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses.
		i := bytes.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(st[i+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		sum += (ut + stime) / 100 // USER_HZ
	}
	return sum
}

// peerDirs are the /proc directories of the other processes of this
// machine that belong to the same pcor application.
func peerDirs() []string {
	key := os.Getenv("PCOR_JOBKEY")
	if key == "" {
		return nil
	}
	want := []byte("\x00PCOR_JOBKEY=" + key + "\x00")
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	var dirs []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// switches counts the context switches of the threads of this process
// and its peers of the application: voluntary (a thread went to sleep:
// a wait, a hand-off to another thread, the runtime's monitor) and
// involuntary (a thread was preempted, which other work on the machine
// makes more frequent).
type switches struct{ vol, invol uint64 }

func switchesNow() switches {
	var s switches
	for _, dir := range append(peerDirs(), "/proc/self") {
		tasks, _ := os.ReadDir(filepath.Join(dir, "task"))
		for _, t := range tasks {
			st, err := os.ReadFile(filepath.Join(dir, "task", t.Name(), "status"))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(st), "\n") {
				k, v, ok := strings.Cut(line, ":")
				if !ok {
					continue
				}
				n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				switch k {
				case "voluntary_ctxt_switches":
					s.vol += n
				case "nonvoluntary_ctxt_switches":
					s.invol += n
				}
			}
		}
	}
	return s
}

func (s switches) sub(t switches) switches { return switches{s.vol - t.vol, s.invol - t.invol} }
