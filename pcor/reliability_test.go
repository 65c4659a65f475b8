package pcor_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/faulty"
	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/fabric/udp"
	"github.com/pcor-go/pcor/pcor"
)

var hostile = faulty.Faults{Loss: 0.10, Duplicate: 0.05, Reorder: 0.05, Corrupt: 0.02}

// mixedSize gives message i of pair p a size from a mix that is mostly
// small, sometimes several fragments.
func mixedSize(p, i int) int {
	switch x := (p*7919 + i*104729) % 100; {
	case x < 3:
		return 100000 + x*20000
	case x < 15:
		return 5000 + x*1000
	case x < 17:
		return 0
	default:
		return 8 + x*13
	}
}

func payload(p, i int) []byte {
	b := randomBytes(mixedSize(p, i), uint64(p)<<32|uint64(i))
	if len(b) >= 8 {
		binary.LittleEndian.PutUint32(b, uint32(p))
		binary.LittleEndian.PutUint32(b[4:], uint32(i))
	}
	return b
}

// exchange sends per messages from thread p of a to thread p of b for
// each of pairs pairs, all at once, and checks every message arrives
// once, intact and in order.
func exchange(t *testing.T, a, b *pcor.Node, pairs, per int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2*pairs)
	for p := 0; p < pairs; p++ {
		wg.Add(2)
		go func(p int) {
			defer wg.Done()
			th := a.Thread(pcor.ThreadID(p))
			dst := pcor.Addr{Proc: b.Proc(), Thread: pcor.ThreadID(p)}
			var reqs []*pcor.Request
			for i := 0; i < per; i++ {
				reqs = append(reqs, th.Isend(dst, pcor.Tag(p%3), payload(p, i)))
				if len(reqs) == 64 {
					for _, r := range reqs {
						if err := r.Wait(ctx); err != nil {
							errs <- fmt.Errorf("pair %d send: %w", p, err)
							return
						}
					}
					reqs = reqs[:0]
				}
			}
			for _, r := range reqs {
				if err := r.Wait(ctx); err != nil {
					errs <- fmt.Errorf("pair %d send: %w", p, err)
					return
				}
			}
		}(p)
		go func(p int) {
			defer wg.Done()
			th := b.Thread(pcor.ThreadID(p))
			src := pcor.Addr{Proc: a.Proc(), Thread: pcor.ThreadID(p)}
			for i := 0; i < per; i++ {
				m, err := th.Recv(ctx, src, pcor.Tag(p%3))
				if err != nil {
					errs <- fmt.Errorf("pair %d recv %d: %w", p, i, err)
					return
				}
				if string(m.Data) != string(payload(p, i)) {
					errs <- fmt.Errorf("pair %d: message %d wrong, out of order or corrupt (len %d)", p, i, len(m.Data))
					return
				}
			}
		}(p)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Nothing more may arrive: every message came exactly once.
	for p := 0; p < pairs; p++ {
		if st, ok := b.Thread(pcor.ThreadID(p)).Iprobe(pcor.Any, pcor.AnyTag); ok {
			t.Fatalf("extra message after the exchange: %+v", st)
		}
	}
}

func faultyNodes(t *testing.T, pa, pb fabric.Port, seed uint64) (*pcor.Node, *pcor.Node, *faulty.Port, *faulty.Port) {
	t.Helper()
	fa := hostile
	fa.Seed = seed
	fb := hostile
	fb.Seed = seed + 1
	wa, wb := faulty.Wrap(pa, fa), faulty.Wrap(pb, fb)
	a, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Port: wa}},
		Peers: []pcor.Peer{{Proc: 1, Fabric: pb.Kind(), Addr: pb.LocalEndpoint().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey, Listen: []pcor.Listen{{Port: wb}},
		Peers: []pcor.Peer{{Proc: 0, Fabric: pa.Kind(), Addr: pa.LocalEndpoint().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b, wa, wb
}

// faultsHappened fails t unless every kind of fault was injected in both
// directions and the nodes saw them: corrupt datagrams dropped by checksum,
// duplicates discarded, losses repaired by retransmission.
func faultsHappened(t *testing.T, a, b *pcor.Node, wa, wb *faulty.Port) {
	t.Helper()
	for i, w := range []*faulty.Port{wa, wb} {
		st := w.Stats()
		if st.Dropped == 0 || st.Duplicated == 0 || st.Reordered == 0 || st.Corrupted == 0 {
			t.Errorf("port %d: not every fault was injected: %+v", i, st)
		}
	}
	sa, sb := a.Stats()[0], b.Stats()[0]
	t.Logf("receiver: %d duplicates, drops %v; sender: %d retransmits, drops %v", sb.Duplicates, sb.Drops, sa.Retransmits, sa.Drops)
	if sb.Drops["checksum"] == 0 || sb.Duplicates == 0 || sa.Retransmits == 0 {
		t.Error("the receiver saw no corruption or duplicate, or the sender retransmitted nothing")
	}
}

func TestHostileMem(t *testing.T) {
	n := mem.NewNetwork()
	pa, _ := n.Listen("a")
	pb, _ := n.Listen("b")
	a, b, wa, wb := faultyNodes(t, pa, pb, 42)
	exchange(t, a, b, 4, 2500)
	faultsHappened(t, a, b, wa, wb)
}

func TestHostileUDP(t *testing.T) {
	pa, err := udp.Listen("127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := udp.Listen("127.0.0.1:0", udp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, b, wa, wb := faultyNodes(t, pa, pb, 7)
	exchange(t, a, b, 4, 2500)
	faultsHappened(t, a, b, wa, wb)
}

// Close races with sends, receives and a large transfer in flight, on both
// nodes at once: every call returns nil or ErrClosed, none hangs, and no
// goroutine of the nodes survives.
func TestCloseDuringTraffic(t *testing.T) {
	base := runtime.NumGoroutine()
	a, c := udpPair(t, pcor.Blocking)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	var calls atomic.Int64
	// ok reports whether a call succeeded; any error but ErrClosed is
	// reported.
	ok := func(what string, err error) bool {
		if err == nil {
			calls.Add(1)
			return true
		}
		if !errors.Is(err, pcor.ErrClosed) {
			errs <- fmt.Errorf("%s: %w", what, err)
		}
		return false
	}
	// Streams each way, and receives that only Close can end.
	small := randomBytes(3000, 1)
	for i := 0; i < 3; i++ {
		// A stream each way between a pair of threads, and a receive.
		ta, tc := a.NewThread(), c.NewThread()
		wg.Add(5)
		go func() {
			defer wg.Done()
			for ok("send a->c", ta.Send(ctx, tc.Addr(), 1, small)) {
			}
		}()
		go func() {
			defer wg.Done()
			for {
				if _, err := tc.Recv(ctx, ta.Addr(), 1); !ok("recv at c", err) {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for ok("send c->a", tc.Send(ctx, ta.Addr(), 2, small)) {
			}
		}()
		go func() {
			defer wg.Done()
			for {
				if _, err := ta.Recv(ctx, pcor.Any, 2); !ok("recv at a", err) {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			// A receive nothing is sent to: it can only end by Close.
			r := tc.Irecv(pcor.Any, 99, nil)
			ok("pending Irecv", r.Wait(ctx))
		}()
	}
	for deadline := time.Now().Add(time.Minute); calls.Load() < 100; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no traffic: %d calls", calls.Load())
		}
	}
	// Then a 256 MiB transfer, under way when Close comes.
	const bigSize = 256 << 20
	before := c.Stats()[0].BytesRecv
	big := make([]byte, bigSize)
	tb, rb := a.NewThread(), c.NewThread()
	bigErrs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		err := tb.Send(ctx, rb.Addr(), 3, big)
		ok("large send", err)
		bigErrs <- err
	}()
	go func() {
		defer wg.Done()
		_, err := rb.RecvInto(ctx, tb.Addr(), 3, make([]byte, bigSize))
		ok("large receive", err)
		bigErrs <- err
	}()
	// It is under way once 16 MiB more have arrived. A loaded machine may
	// slow it down but not stop it: it fails if the bytes received stop
	// growing for a minute, or at once if a call failed (the error says
	// why: a peer found unreachable ends the traffic).
	last, lastAt := before, time.Now()
	for {
		n := c.Stats()[0].BytesRecv
		if n >= before+16<<20 {
			break
		}
		select {
		case err := <-errs:
			t.Fatalf("before Close, %d bytes received: %v", n-before, err)
		case err := <-bigErrs:
			t.Fatalf("the large transfer ended before Close, %d bytes received: %v", n-before, err)
		case <-time.After(time.Millisecond):
		}
		if ctx.Err() != nil {
			t.Fatalf("the large transfer did not start: %d bytes received in %v", n-before, 5*time.Minute)
		}
		if n > last {
			last, lastAt = n, time.Now()
		} else if time.Since(lastAt) > time.Minute {
			t.Fatalf("the large transfer did not start: %d bytes received, none for a minute", n-before)
		}
	}
	// Both nodes close at once, one of them twice; the calls and the
	// closes must all return.
	wg.Add(3)
	go func() { defer wg.Done(); a.Close() }()
	go func() { defer wg.Done(); c.Close() }()
	go func() { defer wg.Done(); a.Close() }()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("calls or Close still blocked 10 s after Close:\n%s", buf[:runtime.Stack(buf, true)])
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := 0; i < 2; i++ {
		if err := <-bigErrs; err == nil {
			t.Error("the large transfer completed before Close: Close did not race with it")
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > base {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left after Close (%d before the nodes)\n%s", g, base, buf[:runtime.Stack(buf, true)])
	}
	t.Logf("%d calls completed before Close", calls.Load())
}

// procStatus returns a field of /proc/self/status in bytes (VmRSS, VmHWM).
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return -1
}

// slowSinkPeer is process 1 of TestSlowReceiverStream. It listens with a
// receive budget of PCOR_TEST_BUDGET bytes, prints its address, then does
// not receive while process 0 streams to it, until a line comes on its
// standard input. It prints the growth of its resident memory over that
// window (the peak, VmHWM, reset when the window opens, less the resident
// size then), then receives PCOR_TEST_COUNT messages of PCOR_TEST_SIZE
// bytes, checks them and prints DONE.
func slowSinkPeer() int {
	budget, _ := strconv.ParseInt(os.Getenv("PCOR_TEST_BUDGET"), 10, 64)
	count, _ := strconv.Atoi(os.Getenv("PCOR_TEST_COUNT"))
	size, _ := strconv.Atoi(os.Getenv("PCOR_TEST_SIZE"))
	n, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey, RecvBudget: budget, UnreachableTimeout: slowReceiverSilence,
		Peers: []pcor.Peer{{Proc: 0, Addr: os.Getenv("PCOR_TEST_PEER")}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer n.Close()
	th := n.NewThread()
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = 1 // resident before the window opens
	}
	runtime.GC()
	before := procStatus("VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		fmt.Fprintln(os.Stderr, "cannot reset VmHWM:", err)
		return 1
	}
	fmt.Printf("ADDR %s\n", n.Endpoints()[0].Addr)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "slowsink:", err)
		return 1
	}
	fmt.Printf("GREW %d\n", procStatus("VmHWM")-before)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := randomBytes(size, 99)
	for i := 0; i < count; i++ {
		m, err := th.RecvInto(ctx, pcor.Addr{Proc: 0, Thread: 0}, 1, buf)
		if err != nil {
			fmt.Fprintln(os.Stderr, "slowsink:", err)
			return 1
		}
		want[0] = byte(i)
		if !bytes.Equal(m.Data, want) {
			fmt.Fprintln(os.Stderr, "slowsink: message", i, "differs")
			return 1
		}
	}
	fmt.Println("DONE")
	return 0
}

// A sender streams 1 GiB in 1 MiB messages (and 512 MiB in 64 MiB
// messages, each larger than the whole budget) to a process that does not
// receive for the first seconds of the transfer: the receiving process's
// resident memory (from /proc/self/status, not an engine counter) grows by
// no more than its receive budget plus slowReceiverOverhead over that
// window, the sender is slowed by BUSY, and once the receiver receives,
// everything arrives.
func TestSlowReceiverStream(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1 GiB")
	}
	for _, tc := range []struct {
		name       string
		size, msgs int
	}{
		{"1MiB-messages", 1 << 20, 1024},
		{"64MiB-messages", 64 << 20, 8}, // each larger than the budget
	} {
		t.Run(tc.name, func(t *testing.T) { slowReceiver(t, tc.size, tc.msgs) })
	}
}

// slowReceiverOverhead is what a receiving process may grow by beyond its
// receive budget: the fabric's receive batch, pooled buffers, control
// blocks and the Go runtime's own growth.
const slowReceiverOverhead = 24 << 20

// slowReceiverSilence is both processes' UnreachableTimeout: a process
// given no CPU for longer than the default 5 s (the receiving one, at load
// 50-77 under -race) cannot be told from a dead one, and what is tested
// here is the receiver's memory, not how soon a dead one is given up.
const slowReceiverSilence = time.Minute

func slowReceiver(t *testing.T, size, msgs int) {
	const budget = 16 << 20
	a, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, UnreachableTimeout: slowReceiverSilence})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PCOR_TEST_ROLE=slowsink", "PCOR_TEST_PEER="+a.Endpoints()[0].Addr,
		"PCOR_TEST_BUDGET="+strconv.Itoa(budget), "PCOR_TEST_COUNT="+strconv.Itoa(msgs), "PCOR_TEST_SIZE="+strconv.Itoa(size))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ADDR ") {
		t.Fatalf("receiver did not start: %q %v", line, err)
	}
	opened := time.Now()
	if err := a.AddPeer(pcor.Peer{Proc: 1, Addr: strings.TrimSpace(strings.TrimPrefix(line, "ADDR "))}); err != nil {
		t.Fatal(err)
	}
	src := a.Thread(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	data := randomBytes(size, 99)
	var sent atomic.Int64
	sendErr := make(chan error, 1)
	go func() {
		for i := 0; i < msgs; i++ {
			data[0] = byte(i)
			if err := src.Send(ctx, pcor.Addr{Proc: 1, Thread: 0}, 1, data); err != nil {
				sendErr <- err
				return
			}
			sent.Add(int64(size))
		}
		sendErr <- nil
	}()
	// The window lasts until the sender has been held back for a second
	// (at least 3 s, at most a minute).
	last, lastAt := int64(0), time.Now()
	for time.Since(opened) < time.Minute {
		time.Sleep(20 * time.Millisecond)
		if n := sent.Load(); n != last {
			last, lastAt = n, time.Now()
		}
		if time.Since(opened) > 3*time.Second && time.Since(lastAt) > time.Second && a.Stats()[0].BusyRecv > 0 {
			break
		}
	}
	stdin.Write([]byte("\n"))
	line, err = out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "GREW ") {
		t.Fatalf("receiver: %q %v", line, err)
	}
	inWindow := sent.Load()
	grew, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "GREW ")), 10, 64)
	t.Logf("over the %v window the receiver grew by %.1f MiB (budget %d MiB); %d MiB accepted, %d BUSY",
		time.Since(opened).Round(time.Millisecond), float64(grew)/(1<<20), budget>>20, inWindow>>20, a.Stats()[0].BusyRecv)
	if raceEnabled {
		t.Log("race detector on: its shadow memory grows with the heap, so resident memory is not judged")
	} else if grew > budget+slowReceiverOverhead {
		t.Errorf("the receiver grew by %d bytes, more than its %d-byte budget plus %d", grew, budget, slowReceiverOverhead)
	}
	if inWindow > 2*budget {
		t.Errorf("%d bytes were accepted while the receiver did not receive (budget %d)", inWindow, budget)
	}
	if a.Stats()[0].BusyRecv == 0 {
		t.Error("the sender was never told BUSY")
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	if line, err := out.ReadString('\n'); err != nil || line != "DONE\n" {
		t.Fatalf("receiver: %q %v", line, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("receiver: %v", err)
	}
}
