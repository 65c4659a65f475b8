package athread

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// threadSlices is the requested slice (sched_runtime) of every thread of
// the process.
func threadSlices(t *testing.T) map[int]uint64 {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]uint64{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if a, err := unix.SchedGetAttr(tid, 0); err == nil {
			m[tid] = a.Runtime
		}
	}
	return m
}

// defaultSlice is the slice of the process's threads (all alike) before
// any runtime asked for one.
func defaultSlice(t *testing.T) uint64 {
	t.Helper()
	var def uint64
	for tid, s := range threadSlices(t) {
		if def != 0 && s != def {
			t.Fatalf("thread %d has slice %d ns, another %d", tid, s, def)
		}
		def = s
	}
	return def
}

// allSlices fails the test unless every thread has slice want.
func allSlices(t *testing.T, when string, want uint64) {
	t.Helper()
	for tid, got := range threadSlices(t) {
		if got != want {
			t.Errorf("%s: thread %d has slice %d ns, want %d", when, tid, got, want)
		}
	}
}

// slicesGranted skips the test where the kernel keeps no slice per thread
// (before Linux 6.12).
func slicesGranted(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Skip(err)
	}
	a.Size, a.Runtime, a.Flags = uint32(unsafe.Sizeof(*a)), uint64(DefaultTimeSlice), 0
	if unix.SchedSetAttr(tid, a, 0) != nil {
		t.Skip("sched_setattr refused a slice")
	}
	b, _ := unix.SchedGetAttr(tid, 0)
	a.Runtime = 0 // the kernel's default
	unix.SchedSetAttr(tid, a, 0)
	if b == nil || b.Runtime != uint64(DefaultTimeSlice) {
		t.Skip("the kernel keeps no slice per thread")
	}
}

// A runtime of a job asks for the short slice on every thread of the
// process, threads made later included, and gives it back on Close.
func TestTimeSliceOfJob(t *testing.T) {
	slicesGranted(t)
	def := defaultSlice(t)
	rts := pair(t, NewRegistry(), nil)
	allSlices(t, "running", uint64(DefaultTimeSlice))
	// A thread the Go runtime makes now inherits the slice.
	made := make(chan int)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		made <- unix.Gettid()
		<-release
		runtime.UnlockOSThread()
	}()
	tid := <-made
	if got := threadSlices(t)[tid]; got != uint64(DefaultTimeSlice) {
		t.Errorf("thread made while running: slice %d ns, want %d", got, DefaultTimeSlice)
	}
	close(release)
	rts[0].Close()
	allSlices(t, "one of two runtimes closed", uint64(DefaultTimeSlice))
	rts[1].Close()
	allSlices(t, "after Close", def)
}

// A runtime of this process only leaves the slices alone unless asked; an
// explicit slice is given and taken back.
func TestTimeSliceOfProcess(t *testing.T) {
	slicesGranted(t)
	checkGoroutines(t)
	def := defaultSlice(t)
	rt, err := New(context.Background(), Config{VPs: 2, Registry: NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	allSlices(t, "single process", def)
	rt.Close()
	rt, err = New(context.Background(), Config{VPs: 2, Registry: NewRegistry(), TimeSlice: 300 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	allSlices(t, "asked for 300µs", 300000)
	rt.Close()
	allSlices(t, "after Close", def)
}
