package athread_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/sourcegraph/conc/pool"
)

// The benchmarks measure each variant and its baselines in the same run,
// interleaved round by round, and report medians and ratios.

const benchRounds = 15

var fibLocal *athread.Func[int, int]

func init() {
	fibLocal = athread.Local(func(ctx context.Context, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		a := athread.Create(ctx, fibLocal, n-1)
		b := athread.Create(ctx, fibLocal, n-2)
		x, _ := a.Join(ctx)
		y, _ := b.Join(ctx)
		return x + y, nil
	})
}

func fibSeq(n int) int {
	if n < 2 {
		return n
	}
	return fibSeq(n-1) + fibSeq(n-2)
}

// fibGoroutines is the first baseline: a goroutine per fork, joined with a
// sync.WaitGroup.
func fibGoroutines(n int) int {
	if n < 2 {
		return n
	}
	var wg sync.WaitGroup
	var x, y int
	wg.Add(2)
	go func() { defer wg.Done(); x = fibGoroutines(n - 1) }()
	go func() { defer wg.Done(); y = fibGoroutines(n - 2) }()
	wg.Wait()
	return x + y
}

// fibConc is the second baseline: a github.com/sourcegraph/conc result
// pool per call (its pools are the library's fork/join primitive; a pool
// bounded in goroutines cannot be nested without deadlock).
func fibConc(n int) int {
	if n < 2 {
		return n
	}
	p := pool.NewWithResults[int]()
	p.Go(func() int { return fibConc(n - 1) })
	p.Go(func() int { return fibConc(n - 2) })
	s := 0
	for _, v := range p.Wait() {
		s += v
	}
	return s
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func spread(d []time.Duration) string {
	s := slices.Clone(d)
	slices.Sort(s)
	return fmt.Sprintf("%v..%v", s[0].Round(time.Microsecond), s[len(s)-1].Round(time.Microsecond))
}

// BenchmarkFibFineGrained: Fibonacci with a thread per call and no cut-off,
// against a goroutine per call with a WaitGroup and against conc pools, at
// 1 and GOMAXPROCS VPs (the baselines at GOMAXPROCS 1 and GOMAXPROCS).
func BenchmarkFibFineGrained(b *testing.B) {
	const n = 22
	want := fibSeq(n)
	for _, vps := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("vps=%d", vps), func(b *testing.B) {
			rt, err := athread.New(context.Background(), athread.Config{VPs: vps, Registry: athread.NewRegistry()})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			ctx := rt.Context()
			variants := []struct {
				name string
				run  func() int
			}{
				{"athread", func() int { v, _ := athread.Create(ctx, fibLocal, n).Join(ctx); return v }},
				{"goroutine+waitgroup", func() int {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(vps))
					return fibGoroutines(n)
				}},
				{"conc-pool", func() int {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(vps))
					return fibConc(n)
				}},
			}
			times := make([][]time.Duration, len(variants))
			b.ResetTimer()
			for r := 0; r < benchRounds*b.N; r++ {
				for i, v := range variants {
					start := time.Now()
					if got := v.run(); got != want {
						b.Fatalf("%s: %d", v.name, got)
					}
					times[i] = append(times[i], time.Since(start))
				}
			}
			b.StopTimer()
			threads := float64(2*fibSeq(n+1) - 1)
			for i, v := range variants {
				b.ReportMetric(float64(median(times[i]).Nanoseconds())/threads, v.name+"-ns/thread")
				b.Logf("%-20s median %v (%s)", v.name, median(times[i]).Round(time.Microsecond), spread(times[i]))
			}
			b.ReportMetric(float64(median(times[1]))/float64(median(times[0])), "x-vs-goroutines")
			b.ReportMetric(float64(median(times[2]))/float64(median(times[0])), "x-vs-conc")
		})
	}
}

// BenchmarkFibCutoff: Fibonacci with a cut-off at 1 VP and at GOMAXPROCS
// VPs, interleaved. The speedup is compared with the number of cores and
// with the speedup this machine gives at the same moment to perfectly
// parallel work (GOMAXPROCS goroutines each computing the same sequential
// Fibonacci, against one goroutine computing them in turn): on a shared
// machine the latter is the ideal that can be reached.
func BenchmarkFibCutoff(b *testing.B) {
	const n, cutoff = 34, 18
	var fibCut *athread.Func[int, int]
	fibCut = athread.Local(func(ctx context.Context, k int) (int, error) {
		if k <= cutoff {
			return fibSeq(k), nil
		}
		x := athread.Create(ctx, fibCut, k-1)
		y := athread.Create(ctx, fibCut, k-2)
		vx, _ := x.Join(ctx)
		vy, _ := y.Join(ctx)
		return vx + vy, nil
	})
	procs := runtime.GOMAXPROCS(0)
	var rts []*athread.Runtime
	for _, vps := range []int{1, procs} {
		rt, err := athread.New(context.Background(), athread.Config{VPs: vps, Registry: athread.NewRegistry()})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close()
		rts = append(rts, rt)
	}
	want := fibSeq(n)
	const refN = 30
	times := make([][]time.Duration, 4)
	b.ResetTimer()
	for r := 0; r < 9*b.N; r++ {
		for i, rt := range rts {
			ctx := rt.Context()
			start := time.Now()
			if v, _ := athread.Create(ctx, fibCut, n).Join(ctx); v != want {
				b.Fatal(v)
			}
			times[i] = append(times[i], time.Since(start))
		}
		sums := make([]int, procs)
		start := time.Now()
		for i := 0; i < procs; i++ {
			sums[i] = fibSeq(refN)
		}
		times[2] = append(times[2], time.Since(start))
		start = time.Now()
		var wg sync.WaitGroup
		for i := 0; i < procs; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); sums[i] += fibSeq(refN) }()
		}
		wg.Wait()
		times[3] = append(times[3], time.Since(start))
		if sums[0] != 2*fibSeq(refN) {
			b.Fatal(sums)
		}
	}
	b.StopTimer()
	speedup := float64(median(times[0])) / float64(median(times[1]))
	ideal := float64(median(times[2])) / float64(median(times[3]))
	b.Logf("fib(%d) cut-off %d: 1 VP %v (%s), %d VPs %v (%s): speedup %.2f; perfectly parallel work: %.2f; cores %d",
		n, cutoff, median(times[0]).Round(time.Microsecond), spread(times[0]),
		procs, median(times[1]).Round(time.Microsecond), spread(times[1]), speedup, ideal, procs)
	b.Logf("load average: %s", loadAvg())
	b.ReportMetric(speedup, "speedup")
	b.ReportMetric(ideal, "parallel-work-speedup")
	b.ReportMetric(speedup/ideal, "of-ideal")
	b.ReportMetric(speedup/float64(procs), "of-cores")
}

// BenchmarkRemoteThread: a remote thread (create in process 1, run, join,
// 8-byte input and output) against a pcor round trip of the same sizes
// between the same processes, interleaved; and the time a process that
// starts with all the work takes to hand threads to 3 idle peers. Both run
// as real processes under pcorrun.
func BenchmarkRemoteThread(b *testing.B) {
	out := pcorrunB(b, 2, "benchremote")
	m := regexp.MustCompile(`REMOTE thread=(\d+) roundtrip=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		b.Fatalf("no result:\n%s", out)
	}
	th, _ := strconv.Atoi(m[1])
	rtt, _ := strconv.Atoi(m[2])
	b.ReportMetric(float64(th)/1e3, "thread-us")
	b.ReportMetric(float64(rtt)/1e3, "roundtrip-us")
	b.ReportMetric(float64(th)/float64(rtt), "x-roundtrip")
	for _, l := range regexp.MustCompile(`COUNTS .*`).FindAllString(out, -1) {
		b.Log(l)
	}
	b.Logf("load average: %s", loadAvg())
}

func BenchmarkHandOut(b *testing.B) {
	out := pcorrunB(b, 4, "benchhandout")
	m := regexp.MustCompile(`HANDOUT all3=(\d+) first=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		b.Fatalf("no result:\n%s", out)
	}
	all, _ := strconv.Atoi(m[1])
	first, _ := strconv.Atoi(m[2])
	b.Logf("load average: %s", loadAvg())
	b.ReportMetric(float64(all)/1e6, "all3-ms")
	b.ReportMetric(float64(first)/1e6, "first-ms")
}

// BenchmarkWavefront runs the alignment case study with a trace and
// reports the VPs' utilisation while the wavefront is wide: the dataflow
// wavefront (each finished tile creates those it enables) against the two
// where the root creates every tile (pipelined: each as soon as the two it
// needs are joined; barrier: an anti-diagonal at a time), interleaved run
// by run.
func BenchmarkWavefront(b *testing.B) {
	dir := b.TempDir()
	if out, err := exec.Command("go", "build", "-o", dir, "github.com/pcor-go/pcor/examples/align").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	re := regexp.MustCompile(`wide \([^)]*\):((?: \d+\.\d+=\d+%)+)`)
	variants := []struct {
		name string
		args []string
	}{{"dataflow", nil}, {"pipelined", []string{"-mode", "pipelined"}}, {"barrier", []string{"-mode", "barrier"}}}
	utils := make([][]float64, len(variants)) // every VP of every run
	mins := make([][]float64, len(variants))  // the least busy VP of each run
	for r := 0; r < 5*b.N; r++ {
		for i, v := range variants {
			args := append([]string{"-len", "6000", "-block", "150", "-trace", filepath.Join(dir, "t.json")}, v.args...)
			out, err := exec.Command(filepath.Join(dir, "align"), args...).CombinedOutput()
			if err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			m := re.FindStringSubmatch(string(out))
			if m == nil {
				b.Fatalf("no utilisation:\n%s", out)
			}
			least := 100.0
			for _, f := range strings.Fields(m[1]) {
				_, pct, _ := strings.Cut(f, "=")
				u, _ := strconv.Atoi(strings.TrimSuffix(pct, "%"))
				utils[i] = append(utils[i], float64(u))
				least = min(least, float64(u))
			}
			mins[i] = append(mins[i], least)
			b.Logf("%s: %s", v.name, strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; "))
		}
	}
	for i, v := range variants {
		slices.Sort(utils[i])
		slices.Sort(mins[i])
		b.ReportMetric(utils[i][len(utils[i])/2], v.name+"-median-util-%")
		b.ReportMetric(mins[i][len(mins[i])/2], v.name+"-median-least-util-%")
	}
	b.Logf("load average: %s", loadAvg())
}

// loadAvg is the machine's load average, to print beside a measure.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func pcorrunB(b *testing.B, n int, role string) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pcorrunBin, "-n", fmt.Sprint(n), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "ATHREAD_TEST_ROLE="+role)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("pcorrun: %v\n%s", err, out)
	}
	return string(out)
}
