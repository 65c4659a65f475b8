//go:build linux

package shm

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// idlePeer is the "idle" role: a port blocked in Receive with nothing
// arriving. After a second to settle it measures its own CPU time and
// voluntary context switches (all threads) over PCOR_SHM_TEST_IDLE and
// prints them.
func idlePeer(p *Port) int {
	go func() {
		msgs := make([][]byte, 1)
		for {
			if _, err := p.Receive(msgs); err != nil {
				return
			}
		}
	}()
	d, err := time.ParseDuration(os.Getenv("PCOR_SHM_TEST_IDLE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	time.Sleep(time.Second)
	var a, b syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &a)
	time.Sleep(d)
	syscall.Getrusage(syscall.RUSAGE_SELF, &b)
	cpu := time.Duration(syscall.TimevalToNsec(b.Utime)+syscall.TimevalToNsec(b.Stime)) -
		time.Duration(syscall.TimevalToNsec(a.Utime)+syscall.TimevalToNsec(a.Stime))
	fmt.Printf("IDLE %d %d\n", cpu.Microseconds(), b.Nvcsw-a.Nvcsw)
	return 0
}

// TestIdleReceiverSleeps checks that a process whose port waits in
// Receive with nothing arriving lets its threads sleep: a wait the Go
// runtime cannot see (a futex inside a system call, woken by a timer to
// look for dead peers) keeps the runtime's monitor thread busy, 500-600
// context switches a second at load 11-14; a wait in the runtime's poller
// with the peers watched by pidfd made 6 a second.
func TestIdleReceiverSleeps(t *testing.T) {
	dir := testDir(t)
	const secs = 3
	_, _, rd := spawnOut(t, nil, "idle", "PCOR_SHM_TEST_DIR="+dir, "PCOR_SHM_TEST_NAME=idle",
		"PCOR_SHM_TEST_IDLE="+strconv.Itoa(secs)+"s")
	line, err := rd.ReadString('\n')
	if err != nil {
		t.Fatalf("idle peer: %q %v", line, err)
	}
	var cpuUs, csw int64
	if _, err := fmt.Sscanf(line, "IDLE %d %d", &cpuUs, &csw); err != nil {
		t.Fatalf("idle peer printed %q: %v", line, err)
	}
	t.Logf("idle port over %d s: %d µs CPU, %d voluntary context switches", secs, cpuUs, csw)
	if csw > 100*secs {
		t.Errorf("an idle port's process switched context %d times in %d s (%d a second), want ≤ 100 a second",
			csw, secs, csw/secs)
	}
}

// TestIdleReceiverSeesDeath checks that a port sleeping in Receive learns
// of a sender's death from its pidfd: it sleeps without waking on a timer
// while the sender lives, and frees the dead sender's slot within a
// second of the kill.
func TestIdleReceiverSeesDeath(t *testing.T) {
	dir := testDir(t)
	recv := listen(t, dir, "r", Config{})
	cmd, _ := spawn(t, nil, "once", "PCOR_SHM_TEST_DIR="+dir, "PCOR_SHM_TEST_NAME=s",
		"PCOR_SHM_TEST_TO="+recv.LocalEndpoint().String())
	got := make(chan error, 1)
	go func() {
		msgs := make([][]byte, 1)
		_, err := recv.Receive(msgs)
		got <- err
		for err == nil {
			_, err = recv.Receive(msgs)
		}
	}()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	before := recv.Stats().Sleeps
	time.Sleep(1500 * time.Millisecond)
	// A timer of scanEvery would have woken it 15 times.
	if n := recv.Stats().Sleeps - before; n > 3 {
		t.Errorf("an idle port with a live sender slept %d times in 1.5 s, want ≤ 3", n)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	cmd.Wait()
	for recv.Stats().Reclaimed == 0 {
		if time.Since(killed) > time.Second {
			t.Fatalf("the killed sender's slot was not freed within a second (%+v)", recv.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("slot freed %v after the kill", time.Since(killed).Round(time.Millisecond))
}
