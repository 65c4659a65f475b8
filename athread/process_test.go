package athread_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	rtrace "runtime/trace"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/pcor"
)

// The multi-process tests run the test binary under pcorrun: each process
// plays the role named by ATHREAD_TEST_ROLE, and process 0 prints what the
// test checks.

var pcorrunBin string

func TestMain(m *testing.M) {
	if role := os.Getenv("ATHREAD_TEST_ROLE"); role != "" {
		os.Exit(runRole(role))
	}
	dir, err := os.MkdirTemp("", "athreadtest")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	code := 1
	out, err := exec.Command("go", "build", "-o", dir, "github.com/pcor-go/pcor/cmd/pcorrun").CombinedOutput()
	if err != nil {
		fmt.Printf("building pcorrun: %v\n%s", err, out)
	} else {
		pcorrunBin = filepath.Join(dir, "pcorrun")
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// point is a user type with a binary codec.
type point struct{ X, Y int32 }

func (p *point) MarshalBinary() ([]byte, error) {
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(p.X)), uint32(p.Y)), nil
}

func (p *point) UnmarshalBinary(b []byte) error {
	if len(b) != 8 {
		return errors.New("point: need 8 bytes")
	}
	p.X, p.Y = int32(binary.LittleEndian.Uint32(b)), int32(binary.LittleEndian.Uint32(b[4:]))
	return nil
}

type work struct {
	N     int64
	Sleep int64 // microseconds
}

type sample struct {
	Name   string
	Values []int64
}

var (
	fib    *athread.Func[int, int]
	slow   *athread.Func[work, int64]
	where  *athread.Func[point, []byte]
	summer *athread.Func[sample, int64]
	echo   *athread.Func[int, int]
	boom   *athread.Func[int, int]
	nop    *athread.Func[int64, int64]
	stamp  *athread.Func[int64, [2]int64]
)

func init() {
	fib = athread.Register("fib", func(ctx context.Context, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		a := athread.Create(ctx, fib, n-1)
		b := athread.Create(ctx, fib, n-2)
		x, err := a.Join(ctx)
		if err != nil {
			return 0, err
		}
		y, err := b.Join(ctx)
		return x + y, err
	}, athread.Fixed[int](), athread.Fixed[int]())
	slow = athread.Register("slow", func(ctx context.Context, w work) (int64, error) {
		if os.Getenv("ATHREAD_TEST_KILL") == fmt.Sprint(athread.Proc(ctx)) {
			time.Sleep(30 * time.Millisecond)
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		time.Sleep(time.Duration(w.Sleep) * time.Microsecond)
		return w.N * w.N, nil
	}, athread.Fixed[work](), athread.Fixed[int64]())
	where = athread.Register("where", func(ctx context.Context, p point) ([]byte, error) {
		return fmt.Appendf(nil, "(%d,%d) in process %d", p.X, p.Y, athread.Proc(ctx)), nil
	}, athread.Binary[point](), athread.Bytes())
	summer = athread.Register("sum", func(ctx context.Context, s sample) (int64, error) {
		var t int64
		for _, v := range s.Values {
			t += v
		}
		return t, nil
	}, athread.Gob[sample](), athread.Fixed[int64]())
	echo = athread.Register("echo", func(ctx context.Context, n int) (int, error) {
		ep := athread.Endpoint(ctx)
		for i := 0; i < n; i++ {
			m, err := ep.Recv(ctx, pcor.Any, 1)
			if err != nil {
				return i, err
			}
			v := binary.LittleEndian.Uint64(m.Data)
			if err := ep.Send(ctx, m.Src, 2, binary.LittleEndian.AppendUint64(nil, v+1)); err != nil {
				return i, err
			}
		}
		return n, nil
	}, athread.Fixed[int](), athread.Fixed[int]())
	boom = athread.Register("boom", func(ctx context.Context, n int) (int, error) {
		var s []int
		return s[n], nil
	}, athread.Fixed[int](), athread.Fixed[int]())
}

func init() {
	nop = athread.Register("nop", func(ctx context.Context, v int64) (int64, error) { return v + 1, nil },
		athread.Fixed[int64](), athread.Fixed[int64]())
	stamp = athread.Register("stamp", func(ctx context.Context, busy int64) ([2]int64, error) {
		started := time.Now().UnixNano()
		rtrace.Log(ctx, "stamp", "start")
		for time.Since(time.Unix(0, started)) < time.Duration(busy) {
		}
		return [2]int64{int64(athread.Proc(ctx)), started}, nil
	}, athread.Fixed[int64](), athread.Fixed[[2]int64]())
}

func medianInt(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchRemote times remote threads against pcor round trips, interleaved.
func benchRemote(ctx context.Context, rt *athread.Runtime) error {
	const rounds, per, warm = 21, 100, 100
	h := athread.Create(ctx, echo, rounds*per+warm, athread.Attr{Place: athread.OnProc, Proc: 1})
	addr, err := h.Addr(ctx)
	if err != nil {
		return err
	}
	ep := rt.Node().NewThread()
	buf := make([]byte, 8)
	roundTrip := func() error {
		if err := ep.Send(ctx, addr, 1, buf); err != nil {
			return err
		}
		_, err := ep.Recv(ctx, addr, 2)
		return err
	}
	remote := func() error {
		_, err := athread.Create(ctx, nop, 1, athread.Attr{Place: athread.OnProc, Proc: 1}).Join(ctx)
		return err
	}
	for i := 0; i < warm; i++ {
		if err := roundTrip(); err != nil {
			return err
		}
		if err := remote(); err != nil {
			return err
		}
	}
	var th, rtt []int64
	var cnt [2]counts // this process's counts over each kind of operation
	for r := 0; r < rounds; r++ {
		c0 := takeCounts(rt)
		rtrace.Log(ctx, "phase", "thread")
		start := time.Now()
		for i := 0; i < per; i++ {
			if err := remote(); err != nil {
				return err
			}
		}
		th = append(th, int64(time.Since(start))/per)
		c1 := takeCounts(rt)
		rtrace.Log(ctx, "phase", "roundtrip")
		start = time.Now()
		for i := 0; i < per; i++ {
			if err := roundTrip(); err != nil {
				return err
			}
		}
		rtt = append(rtt, int64(time.Since(start))/per)
		c2 := takeCounts(rt)
		rtrace.Log(ctx, "phase", "end")
		cnt[0].add(c1.sub(c0))
		cnt[1].add(c2.sub(c1))
	}
	if _, err := h.Join(ctx); err != nil {
		return err
	}
	fmt.Printf("REMOTE thread=%d roundtrip=%d threads=%v roundtrips=%v\n", medianInt(th), medianInt(rtt), th, rtt)
	for i, name := range []string{"thread", "roundtrip"} {
		fmt.Printf("COUNTS %s %s\n", name, cnt[i].per(rounds*per))
	}
	return nil
}

// counts are load-independent figures of this process: its context
// switches (getrusage), its runtime's requests for work sent and served,
// and, per port, the batches of datagrams received by a driving thread and
// by the port's dispatcher goroutine.
type counts struct {
	csw    int64
	steals uint64 // requests for work sent and served
	thread []uint64
	disp   []uint64
	fabric []string
}

func takeCounts(rt *athread.Runtime) counts {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	ac := rt.Counters()
	c := counts{csw: ru.Nvcsw + ru.Nivcsw, steals: ac.RemoteStealsTried + ac.StealsServed}
	for _, s := range rt.Node().Stats() {
		c.thread = append(c.thread, s.ThreadBatches)
		c.disp = append(c.disp, s.DispatcherBatches)
		c.fabric = append(c.fabric, s.Fabric)
	}
	return c
}

func (c counts) sub(o counts) counts {
	d := counts{csw: c.csw - o.csw, steals: c.steals - o.steals, fabric: c.fabric}
	for i := range c.thread {
		d.thread = append(d.thread, c.thread[i]-o.thread[i])
		d.disp = append(d.disp, c.disp[i]-o.disp[i])
	}
	return d
}

func (c *counts) add(d counts) {
	c.csw += d.csw
	c.steals += d.steals
	c.fabric = d.fabric
	if c.thread == nil {
		c.thread, c.disp = make([]uint64, len(d.thread)), make([]uint64, len(d.thread))
	}
	for i := range d.thread {
		c.thread[i] += d.thread[i]
		c.disp[i] += d.disp[i]
	}
}

// per formats the counts per operation, over n operations.
func (c counts) per(n int) string {
	s := fmt.Sprintf("csw=%.2f steal-requests=%.2f", float64(c.csw)/float64(n), float64(c.steals)/float64(n))
	for i, f := range c.fabric {
		s += fmt.Sprintf(" %s:thread-batches=%.2f,dispatcher-batches=%.2f", f, float64(c.thread[i])/float64(n), float64(c.disp[i])/float64(n))
	}
	return s
}

// benchHandOut measures how long process 0, starting with all the work,
// takes to hand threads to its 3 idle peers: each thread reports where
// and when it started.
func benchHandOut(ctx context.Context, rt *athread.Runtime) error {
	var all, first []int64
	for r := 0; r < 11; r++ {
		time.Sleep(20 * time.Millisecond) // let the peers go idle
		rtrace.Log(ctx, "phase", "round")
		start := time.Now().UnixNano()
		var hs []*athread.Handle[[2]int64]
		for i := 0; i < 64; i++ {
			hs = append(hs, athread.Create(ctx, stamp, int64(2*time.Millisecond)))
		}
		earliest := map[int64]int64{}
		for _, h := range hs {
			v, err := h.Join(ctx)
			if err != nil {
				return err
			}
			if e, ok := earliest[v[0]]; v[0] != 0 && (!ok || v[1] < e) {
				earliest[v[0]] = v[1]
			}
		}
		if len(earliest) < 3 {
			fmt.Printf("HANDOUT round %d: only %d peers got work\n", r, len(earliest))
			all = append(all, int64(time.Hour))
			continue
		}
		if os.Getenv("ATHREAD_TEST_ROUNDS") != "" {
			fmt.Printf("HANDROUND %d: %d %d %d (us)\n", r, (earliest[1]-start)/1000, (earliest[2]-start)/1000, (earliest[3]-start)/1000)
		}
		var lo, hi int64 = 1 << 62, 0
		for _, e := range earliest {
			lo, hi = min(lo, e-start), max(hi, e-start)
		}
		all, first = append(all, hi), append(first, lo)
	}
	if len(first) == 0 {
		first = []int64{int64(time.Hour)}
	}
	fmt.Printf("HANDOUT all3=%d first=%d all3s=%v\n", medianInt(all), medianInt(first), all)
	return nil
}

// asyncOnly is a policy all of whose requests are asynchronous; it counts
// the times the thief came back to it while a request was unanswered.
type asyncOnly struct {
	athread.Random
	outstanding atomic.Int64
}

func (a *asyncOnly) Victim(q athread.StealQuery) (pcor.ProcID, bool) {
	if q.Outstanding {
		a.outstanding.Add(1)
		return 0, false
	}
	return a.Random.Victim(q)
}

func (a *asyncOnly) Async(q athread.StealQuery, victim pcor.ProcID) bool { return true }

// The utilisation test: 48 threads each busy 2 ms, spread over the
// processes; utilFrom and utilTo bracket them and utilRan counts the
// threads each process ran.
var (
	utilFrom, utilTo time.Time
	utilRan          = map[int64]int{}
)

func utilRun(ctx context.Context) error {
	utilFrom = time.Now()
	var hs []*athread.Handle[[2]int64]
	for i := 0; i < 48; i++ {
		hs = append(hs, athread.Create(ctx, stamp, int64(2*time.Millisecond)))
	}
	for _, h := range hs {
		v, err := h.Join(ctx)
		if err != nil {
			return err
		}
		utilRan[v[0]]++
	}
	utilTo = time.Now()
	return nil
}

// printUtil prints, per process, the threads it ran and the busy time of
// its VPs the trace shows: "UTIL p:ran:busyµs ...".
func printUtil(rt *athread.Runtime) {
	busy := map[pcor.ProcID]float64{}
	vps := map[pcor.ProcID]int{}
	for _, u := range rt.JobUtilisation(utilFrom, utilTo) {
		busy[u.Proc] += u.Busy * float64(utilTo.Sub(utilFrom).Microseconds())
		vps[u.Proc]++
	}
	fmt.Print("UTIL")
	for p := pcor.ProcID(0); p < 4; p++ {
		fmt.Printf(" %d:%d:%d:%.0f", p, vps[p], utilRan[int64(p)], busy[p])
	}
	fmt.Println()
}

func runRole(role string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// ATHREAD_TEST_RUNTIME_TRACE=dir writes each process's Go execution
	// trace to dir/rankN.trace (go tool trace -pprof=sched reads them).
	if dir := os.Getenv("ATHREAD_TEST_RUNTIME_TRACE"); dir != "" {
		if f, err := os.Create(filepath.Join(dir, "rank"+os.Getenv("PCOR_RANK")+".trace")); err == nil {
			defer f.Close()
			if rtrace.Start(f) == nil {
				defer rtrace.Stop()
			}
		}
	}
	if role == "mismatch" && os.Getenv("PCOR_RANK") == "2" {
		athread.Register("extra", func(ctx context.Context, n int) (int, error) { return n, nil },
			athread.Fixed[int](), athread.Fixed[int]())
	}
	cfg := athread.Config{VPs: 2, Trace: role == "util"}
	var async *asyncOnly
	if role == "async" {
		async = &asyncOnly{}
		cfg.Policy = async
	}
	rt, err := athread.FromEnv(ctx, cfg)
	if err != nil {
		fmt.Println("START", err)
		return 1
	}
	defer rt.Close()
	err = rt.Run(ctx, func(ctx context.Context) error {
		switch role {
		case "benchremote":
			return benchRemote(ctx, rt)
		case "benchhandout":
			return benchHandOut(ctx, rt)
		case "util":
			return utilRun(ctx)
		case "async":
			v, err := athread.Create(ctx, fib, 25).Join(ctx)
			fmt.Println("FIB", v, err)
		case "fib":
			v, err := athread.Create(ctx, fib, 24).Join(ctx)
			fmt.Println("FIB", v, err)
		case "codecs":
			for p := 0; p < 4; p++ {
				h := athread.Create(ctx, where, point{int32(p), -int32(p)}, athread.Attr{Place: athread.OnProc, Proc: pcor.ProcID(p)})
				b, err := h.Join(ctx)
				fmt.Printf("WHERE %s %v\n", b, err)
			}
			var hs []*athread.Handle[int64]
			for i := 0; i < 40; i++ {
				s := sample{Name: "s", Values: []int64{int64(i), 1000}}
				hs = append(hs, athread.Create(ctx, summer, s, athread.Attr{Place: athread.OnProc, Proc: pcor.ProcID(i % 4)}))
			}
			var total int64
			for _, h := range hs {
				v, err := h.Join(ctx)
				if err != nil {
					fmt.Println("SUM", err)
				}
				total += v
			}
			fmt.Println("SUM", total)
		case "remote":
			h := athread.Create(ctx, echo, 100, athread.Attr{Place: athread.OnProc, Proc: 3})
			addr, err := h.Addr(ctx)
			if err != nil {
				fmt.Println("ADDR", err)
				return err
			}
			ep := rt.Node().NewThread()
			var v uint64
			for i := 0; i < 100; i++ {
				if err := ep.Send(ctx, addr, 1, binary.LittleEndian.AppendUint64(nil, v)); err != nil {
					return err
				}
				m, err := ep.Recv(ctx, addr, 2)
				if err != nil {
					return err
				}
				v = binary.LittleEndian.Uint64(m.Data)
			}
			n, err := h.Join(ctx)
			fmt.Println("ECHO", addr.Proc, v, n, err)
			// A thread whose endpoint was not asked for while it ran:
			// its owner learns it with the result.
			late := athread.Create(ctx, nop, 1, athread.Attr{Place: athread.OnProc, Proc: 2})
			_, err = late.Join(ctx)
			a, aerr := late.Addr(ctx)
			fmt.Println("LATE", a.Proc, a.Thread != addr.Thread || a.Proc != addr.Proc, err, aerr)
		case "panic":
			_, err := athread.Create(ctx, boom, 5, athread.Attr{Place: athread.OnProc, Proc: 2}).Join(ctx)
			var pe *athread.PanicError
			fmt.Println("PANIC", errors.As(err, &pe), pe != nil && pe.Proc == 2, strings.Contains(fmt.Sprint(err), "index out of range"))
		case "kill", "killidem":
			var hs []*athread.Handle[int64]
			idem := role == "killidem"
			for i := int64(0); i < 200; i++ {
				hs = append(hs, athread.Create(ctx, slow, work{N: i, Sleep: 5000}, athread.Attr{Idempotent: idem}))
			}
			var total int64
			var firstErr error
			for _, h := range hs {
				v, err := h.Join(ctx)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				total += v
			}
			c := rt.Counters()
			fmt.Println("KILL", total, c.ReRuns, c.PeersLost, errors.Is(firstErr, pcor.ErrPeerDown), firstErr)
		}
		return nil
	})
	if role == "util" && rt.Proc() == 0 {
		printUtil(rt)
	}
	if async != nil {
		fmt.Printf("ASYNC proc=%d outstanding=%d\n", rt.Proc(), async.outstanding.Load())
	}
	c := rt.Counters()
	fmt.Printf("COUNTERS proc=%d run=%d remoteSteals=%d given=%d\n", rt.Proc(), c.TasksRun, c.RemoteSteals, c.Given)
	if err != nil {
		fmt.Println("RUN", err)
		return 1
	}
	return 0
}

// pcorrun runs the test binary in role as n processes and returns its
// output.
func pcorrun(t *testing.T, n int, role string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, pcorrunBin, "--keep-going", "-n", fmt.Sprint(n), os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "ATHREAD_TEST_ROLE="+role), env...)
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("pcorrun timed out:\n%s", out)
	}
	return string(out)
}

func line(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "] "+prefix+" "); i >= 0 && strings.HasPrefix(l, "[0]") {
			return l[i+2:]
		}
	}
	return ""
}

// Threads of a registered function move between real processes (UDP) and
// their results come back to the joins.
func TestFibAcrossProcesses(t *testing.T) {
	out := pcorrun(t, 4, "fib")
	if got := line(out, "FIB"); got != "FIB 46368 <nil>" {
		t.Fatalf("got %q:\n%s", got, out)
	}
	// Other processes ran stolen threads.
	ran := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "COUNTERS") && !strings.HasPrefix(l, "[0]") && !strings.Contains(l, "remoteSteals=0 ") {
			ran++
		}
	}
	if ran == 0 {
		t.Fatalf("no process stole work:\n%s", out)
	}
}

// Inputs and outputs cross processes through the Binary, Bytes, Gob and
// Fixed codecs.
func TestCodecsAcrossProcesses(t *testing.T) {
	out := pcorrun(t, 4, "codecs")
	for p := 0; p < 4; p++ {
		want := fmt.Sprintf("(%d,%d) in process %d <nil>", p, -p, p)
		if !strings.Contains(out, "[0] WHERE "+want) {
			t.Fatalf("no %q:\n%s", want, out)
		}
	}
	if got := line(out, "SUM"); got != fmt.Sprintf("SUM %d", 40*39/2+40*1000) {
		t.Fatalf("got %q:\n%s", got, out)
	}
}

// A thread started in another process with an endpoint of its own
// exchanges messages with its creator, which then joins it.
func TestRemoteThreadEndpoint(t *testing.T) {
	out := pcorrun(t, 4, "remote")
	if got := line(out, "ECHO"); got != "ECHO 3 100 100 <nil>" {
		t.Fatalf("got %q:\n%s", got, out)
	}
	if got := line(out, "LATE"); got != "LATE 2 true <nil> <nil>" {
		t.Fatalf("got %q:\n%s", got, out)
	}
}

func TestRemotePanic(t *testing.T) {
	out := pcorrun(t, 4, "panic")
	if got := line(out, "PANIC"); got != "PANIC true true true" {
		t.Fatalf("got %q:\n%s", got, out)
	}
}

// A process registering one more function than the others is refused at
// start-up, by every process, with the difference named.
func TestRegistrationMismatch(t *testing.T) {
	out := pcorrun(t, 3, "mismatch")
	if !strings.Contains(out, `[2] START athread: registered functions differ between processes: process 2 against process 0: "extra" is registered here but not there`) {
		t.Fatalf("process 2 did not report the difference:\n%s", out)
	}
	if !strings.Contains(out, `[0] START athread: registered functions differ between processes: process 0 against process 2: "extra" is registered there but not here`) {
		t.Fatalf("process 0 did not report the difference:\n%s", out)
	}
}

// An AsyncPolicy's requests are sent without waiting for the answer: the
// thief asks the policy again while one is outstanding, and the answers
// still bring threads.
func TestAsyncRequests(t *testing.T) {
	out := pcorrun(t, 4, "async")
	if got := line(out, "FIB"); got != "FIB 75025 <nil>" {
		t.Fatalf("got %q:\n%s", got, out)
	}
	var stolen, handed, came uint64
	for _, l := range strings.Split(out, "\n") {
		var p, run, steals, given, outst uint64
		if _, err := fmt.Sscanf(l[min(len(l), strings.Index(l, "] ")+2):], "COUNTERS proc=%d run=%d remoteSteals=%d given=%d", &p, &run, &steals, &given); err == nil {
			stolen += steals
			handed += given
		}
		if _, err := fmt.Sscanf(l[min(len(l), strings.Index(l, "] ")+2):], "ASYNC proc=%d outstanding=%d", &p, &outst); err == nil {
			came += outst
		}
	}
	if stolen < 3 || came == 0 {
		t.Fatalf("%d threads stolen, the thief came back %d times with a request outstanding:\n%s", stolen, came, out)
	}
	// Every thread handed over answered a request: a thief asking
	// asynchronously is never fed a thread unasked.
	if handed != stolen {
		t.Fatalf("%d threads handed over for %d received in answer to a request:\n%s", handed, stolen, out)
	}
}

// JobUtilisation covers every process: in each, the busy time of its VPs
// in the trace is at least the 2 ms of every thread it ran.
func TestJobUtilisation(t *testing.T) {
	out := pcorrun(t, 4, "util")
	got := line(out, "UTIL")
	f := strings.Fields(got)
	if len(f) != 5 {
		t.Fatalf("got %q:\n%s", got, out)
	}
	total, elsewhere := 0, 0
	for p, s := range f[1:] {
		var proc, vps, ran int
		var busy float64
		if n, _ := fmt.Sscanf(s, "%d:%d:%d:%f", &proc, &vps, &ran, &busy); n != 4 || proc != p || vps != 2 {
			t.Fatalf("process %d: %q (want 2 VPs):\n%s", p, s, out)
		}
		if busy < float64(ran)*2000 {
			t.Errorf("process %d ran %d threads of 2 ms but its VPs were busy %.0f µs", p, ran, busy)
		}
		total += ran
		if p > 0 {
			elsewhere += ran
		}
	}
	if total != 48 || elsewhere == 0 {
		t.Fatalf("%d threads ran, %d outside process 0: %q\n%s", total, elsewhere, got, out)
	}
}

// A process killed while running stolen threads: their Joins fail naming
// it, or idempotent threads run again elsewhere and the result is right.
func TestKilledProcess(t *testing.T) {
	var want int64
	for i := int64(0); i < 200; i++ {
		want += i * i
	}
	out := pcorrun(t, 4, "killidem", "ATHREAD_TEST_KILL=2")
	got := line(out, "KILL")
	var total, reruns, lost int64
	var down bool
	fmt.Sscanf(got, "KILL %d %d %d %t", &total, &reruns, &lost, &down)
	if total != want || reruns < 1 || lost != 1 {
		t.Fatalf("idempotent: got %q (want total %d, re-runs, 1 lost):\n%s", got, want, out)
	}
	out = pcorrun(t, 4, "kill", "ATHREAD_TEST_KILL=2")
	got = line(out, "KILL")
	if !strings.Contains(got, " true ") || !strings.Contains(got, `running in process 2, which is gone`) {
		t.Fatalf("not idempotent: got %q:\n%s", got, out)
	}
}
