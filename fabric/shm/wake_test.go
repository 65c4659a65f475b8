//go:build linux

package shm

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// wakePeers are how many datagrams the "busy" role receives.
const wakePeers = 20

// busyPeer is the "busy" role: a port that sleeps in Receive until a
// datagram comes, then keeps a processor busy for 5 ms (as a process does
// with what it received), wakePeers times. It prints the voluntary
// context switches of all its threads over those wake-ups.
func busyPeer(p *Port) int {
	msgs := make([][]byte, 1)
	var a, b syscall.Rusage
	for i := range wakePeers {
		if _, err := p.Receive(msgs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if i == 0 {
			syscall.Getrusage(syscall.RUSAGE_SELF, &a)
		}
		for t := time.Now(); time.Since(t) < 5*time.Millisecond; {
		}
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &b)
	fmt.Printf("WOKEN %d\n", b.Nvcsw-a.Nvcsw)
	return 0
}

// TestWakeLeavesMonitorAsleep checks that a receiver woken from its
// sleep does not also wake the Go runtime's monitor thread (sysmon): a
// system call through the runtime from a process whose processors were
// all idle wakes it, and it then polls every 20 µs for a millisecond or
// more, about fifty context switches for every datagram that wakes a
// sleeping receiver which then works. The doorbell is read and written by
// raw system calls, which the runtime does not see.
func TestWakeLeavesMonitorAsleep(t *testing.T) {
	dir := testDir(t)
	_, ep, rd := spawnOut(t, nil, "busy", "PCOR_SHM_TEST_DIR="+dir, "PCOR_SHM_TEST_NAME=busy")
	s := listen(t, dir, "s", Config{})
	to, err := s.ParseEndpoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	for i := range wakePeers {
		// Long enough for the receiver to work, go idle and sleep.
		time.Sleep(30 * time.Millisecond)
		if _, err := s.Send([]fabric.Datagram{{Body: []byte{byte(i)}, To: to}}); err != nil {
			t.Fatal(err)
		}
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		t.Fatalf("busy peer: %q %v", line, err)
	}
	var csw int64
	if _, err := fmt.Sscanf(line, "WOKEN %d", &csw); err != nil {
		t.Fatalf("busy peer printed %q: %v", line, err)
	}
	per := float64(csw) / (wakePeers - 1)
	t.Logf("%d voluntary context switches over %d wake-ups (%.1f each)", csw, wakePeers-1, per)
	if per > 12 {
		t.Errorf("%.1f voluntary context switches a wake-up, want ≤ 12: the runtime's monitor thread polls", per)
	}
}
