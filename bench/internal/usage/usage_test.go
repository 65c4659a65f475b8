package usage

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var spin int

func TestSelfCountsWork(t *testing.T) {
	a := Self()
	// Spend CPU and make system calls in a goroutine, which may run on a
	// thread started after the counter opened. The spin runs until the
	// measured CPU has grown (a loaded machine gives less CPU than wall
	// time), within a bound.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 2000; i++ {
			unix.Getpid()
		}
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
			for i := 0; i < 1e5; i++ {
				spin++
			}
			if Self().CPU-a.CPU >= int64(10*time.Millisecond) {
				return
			}
		}
	}()
	<-done
	time.Sleep(2 * time.Millisecond) // a voluntary switch at least
	b := Self()
	d := b.Sub(a)
	if d.CPU < int64(10*time.Millisecond) {
		t.Errorf("CPU %v, want at least 10ms", time.Duration(d.CPU))
	}
	if d.Voluntary < 1 {
		t.Errorf("voluntary switches %d", d.Voluntary)
	}
	if why := SyscallsUnavailable(); why != "" {
		if os.Getuid() == 0 {
			t.Logf("as root but: %s", why)
		}
		t.Skip(why)
	}
	if !d.HasSyscalls || d.Syscalls < 2000 {
		t.Errorf("syscalls %d (valid %v), want at least 2000", d.Syscalls, d.HasSyscalls)
	}
}
