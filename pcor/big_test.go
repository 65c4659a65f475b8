package pcor_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// word is the i-th 8-byte word of the pattern of seed: cheap enough to
// fill and check a GiB.
func word(seed, i uint64) uint64 {
	x := (i+1)*0x9e3779b97f4a7c15 ^ seed
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	return x ^ x>>29
}

func fillPattern(b []byte, seed uint64) {
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], word(seed, uint64(i/8)))
	}
}

// checkPattern returns the offset of the first word of b that differs from
// the pattern, or -1.
func checkPattern(b []byte, seed uint64) int {
	for i := 0; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != word(seed, uint64(i/8)) {
			return i
		}
	}
	return -1
}

// bigSinkPeer is process 1 of TestGiBMessageUDP: it posts a receive of
// PCOR_TEST_SIZE bytes, prints its address, and checks the message that
// arrives.
func bigSinkPeer() int {
	size, _ := strconv.Atoi(os.Getenv("PCOR_TEST_SIZE"))
	n, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey,
		Peers: []pcor.Peer{{Proc: 0, Addr: os.Getenv("PCOR_TEST_PEER")}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer n.Close()
	r := n.NewThread().Irecv(pcor.Addr{Proc: 0, Thread: 0}, 5, n.Alloc(size))
	fmt.Printf("ADDR %s\n", n.Endpoints()[0].Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := r.Wait(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bigsink:", err)
		return 1
	}
	m := r.Message()
	if len(m.Data) != size {
		fmt.Fprintf(os.Stderr, "bigsink: %d bytes, want %d\n", len(m.Data), size)
		return 1
	}
	if off := checkPattern(m.Data, 5); off >= 0 {
		fmt.Fprintf(os.Stderr, "bigsink: differs at byte %d\n", off)
		return 1
	}
	fmt.Println("OK")
	return 0
}

// A 1 GiB message (the default MaxMessage) goes from one process to
// another over UDP and arrives intact.
func TestGiBMessageUDP(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 1 GiB")
	}
	if raceEnabled {
		t.Skip("too slow under the race detector; CI runs it without")
	}
	const size = 1 << 30
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cmd, out := startPeer(t, "bigsink", n, pcor.Peer{Proc: 1}, "PCOR_TEST_SIZE="+strconv.Itoa(size))
	data := n.Alloc(size)
	fillPattern(data, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if err := n.NewThread().Send(ctx, pcor.Addr{Proc: 1, Thread: 0}, 5, data); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	if line, err := out.ReadString('\n'); err != nil || line != "OK\n" {
		t.Fatalf("peer: %q %v", line, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("peer: %v", err)
	}
	st := n.Stats()[0]
	t.Logf("1 GiB in %v (%.0f MB/s), %d fragments, %d retransmitted", el.Round(time.Millisecond), size/el.Seconds()/1e6, st.FragsSent, st.Retransmits)
}
