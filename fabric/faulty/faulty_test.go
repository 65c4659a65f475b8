package faulty

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
)

func TestNoFaultsPassesEverythingInOrder(t *testing.T) {
	a, b := pair(t, Faults{Seed: 1}, 1<<12)
	sendSeq(t, a, b.LocalEndpoint(), 0, 1000, 7)
	got := drain(t, b)
	if len(got) != 1000 {
		t.Fatalf("received %d datagrams, want 1000", len(got))
	}
	for i, m := range got {
		if s, ok := parse(m); !ok || s != uint64(i) {
			t.Fatalf("datagram %d: seq %d intact %v", i, s, ok)
		}
	}
	st := a.Stats()
	if st.Offered != 1000 || st.Sent != 1000 || st.Dropped+st.Duplicated+st.Corrupted+st.Reordered+st.Delayed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRates(t *testing.T) {
	const n = 20000
	f := Faults{Seed: 42, Loss: 0.1, Duplicate: 0.05, Corrupt: 0.03}
	a, b := pair(t, f, 2*n)
	sendSeq(t, a, b.LocalEndpoint(), 0, n, 32)
	st := a.Stats()
	within(t, "Dropped", st.Dropped, n, f.Loss)
	kept := n - int(st.Dropped)
	within(t, "Duplicated", st.Duplicated, kept, f.Duplicate)
	within(t, "Corrupted", st.Corrupted, kept, f.Corrupt)
	if st.Offered != n || st.Sent != uint64(kept)+st.Duplicated {
		t.Fatalf("stats %+v: want Offered %d and Sent = kept + duplicated", st, n)
	}

	got := drain(t, b)
	if uint64(len(got)) != st.Sent {
		t.Fatalf("received %d datagrams, port sent %d", len(got), st.Sent)
	}
	bad, seen := 0, map[uint64]int{}
	for _, m := range got {
		s, ok := parse(m)
		if !ok {
			bad++
			continue
		}
		seen[s]++
	}
	// Each corrupted datagram arrives damaged, once or (duplicated) twice.
	if bad < int(st.Corrupted) || bad > 2*int(st.Corrupted) {
		t.Errorf("%d damaged datagrams received, %d corrupted", bad, st.Corrupted)
	}
	twice := 0
	for _, c := range seen {
		if c > 2 {
			t.Fatalf("a datagram arrived %d times", c)
		}
		if c == 2 {
			twice++
		}
	}
	if twice > int(st.Duplicated) || twice < int(st.Duplicated)-bad {
		t.Errorf("%d datagrams arrived twice, %d duplicated", twice, st.Duplicated)
	}
}

// larger returns, for each received sequence number, how many larger ones
// arrived before it.
func larger(t *testing.T, got [][]byte) map[uint64]int {
	t.Helper()
	out := make(map[uint64]int, len(got))
	var before []uint64
	for _, m := range got {
		s, ok := parse(m)
		if !ok {
			t.Fatal("damaged datagram")
		}
		if _, dup := out[s]; dup {
			t.Fatalf("seq %d arrived twice", s)
		}
		c := 0
		for _, p := range before {
			if p > s {
				c++
			}
		}
		out[s] = c
		before = append(before, s)
	}
	return out
}

func TestReorderAfterK(t *testing.T) {
	const n, k = 3000, 3
	// The hold time is long enough that only datagrams at the very end
	// leave by time.
	f := Faults{Seed: 9, Reorder: 0.1, ReorderAfter: k, ReorderDelay: 200 * time.Millisecond}
	a, b := pair(t, f, 2*n)
	sendSeq(t, a, b.LocalEndpoint(), 0, n, 5)
	got := collect(t, b, n, 5*time.Second)
	if len(got) != n {
		t.Fatalf("received %d of %d", len(got), n)
	}
	st := a.Stats()
	within(t, "Reordered", st.Reordered, n, f.Reorder)
	hist := make([]int, k+1)
	for s, c := range larger(t, got) {
		if c > k {
			t.Fatalf("seq %d overtaken by %d, at most %d allowed", s, c, k)
		}
		hist[c]++
	}
	// Held datagrams are overtaken by exactly k others, except the last
	// few, which leave by time.
	if hist[k] > int(st.Reordered) || hist[k] < int(st.Reordered)-k {
		t.Errorf("%d datagrams overtaken by %d, %d reordered (histogram %v)", hist[k], k, st.Reordered, hist)
	}
	for c := 1; c < k; c++ {
		if hist[c] > k {
			t.Errorf("%d datagrams overtaken by %d: only the last ones may be (histogram %v)", hist[c], c, hist)
		}
	}
}

func TestReorderByTime(t *testing.T) {
	f := Faults{Seed: 3, Reorder: 1, ReorderAfter: 1 << 30, ReorderDelay: 5 * time.Millisecond}
	a, b := pair(t, f, 64)
	start := time.Now()
	sendSeq(t, a, b.LocalEndpoint(), 0, 10, 10)
	got := collect(t, b, 10, 5*time.Second)
	if len(got) != 10 {
		t.Fatalf("received %d of 10", len(got))
	}
	if d := time.Since(start); d < f.ReorderDelay {
		t.Fatalf("held datagrams arrived after %v, before the hold time %v", d, f.ReorderDelay)
	}
}

// run sends the same datagrams through a port with faults f, then lets
// held ones out by sending fault-free filler, and returns what arrived.
func runSeq(t *testing.T, f Faults) ([][]byte, Stats) {
	a, b := pair(t, f, 1<<14)
	sendSeq(t, a, b.LocalEndpoint(), 0, 4000, 16)
	st := a.Stats()
	clean := Faults{Seed: f.Seed}
	if err := a.SetFaults(clean); err != nil {
		t.Fatal(err)
	}
	sendSeq(t, a, b.LocalEndpoint(), 1<<32, 1<<32+uint64(f.ReorderAfter), 1)
	return drain(t, b), st
}

func TestSameSeedSameSequence(t *testing.T) {
	f := Faults{Seed: 7, Loss: 0.05, Duplicate: 0.05, Corrupt: 0.05, Reorder: 0.05, ReorderAfter: 4, ReorderDelay: time.Minute}
	got1, st1 := runSeq(t, f)
	got2, st2 := runSeq(t, f)
	if st1 != st2 {
		t.Fatalf("stats differ:\n%+v\n%+v", st1, st2)
	}
	if len(got1) != len(got2) {
		t.Fatalf("received %d and %d datagrams", len(got1), len(got2))
	}
	for i := range got1 {
		if !bytes.Equal(got1[i], got2[i]) {
			t.Fatalf("datagram %d differs: %x and %x", i, got1[i], got2[i])
		}
	}
	f.Seed = 8
	got3, st3 := runSeq(t, f)
	if st3 == st1 {
		t.Fatalf("seeds 7 and 8 gave the same stats %+v", st1)
	}
	same := len(got3) == len(got1)
	for i := 0; same && i < len(got1); i++ {
		same = bytes.Equal(got1[i], got3[i])
	}
	if same {
		t.Fatal("seeds 7 and 8 gave the same datagrams")
	}
}

func TestDelay(t *testing.T) {
	const n = 200
	f := Faults{Seed: 5, Delay: 3 * time.Millisecond, Jitter: 4 * time.Millisecond}
	a, b := pair(t, f, 2*n)
	start := time.Now()
	sendSeq(t, a, b.LocalEndpoint(), 0, n, n)
	// Every datagram left after start, so one that a poll returned before
	// start+Delay was released early. A poll that ends later proves
	// nothing either way (the send itself may have taken the whole delay
	// on a loaded machine), and what it returned counts as arrived.
	early := drain(t, b)
	if d := time.Since(start); len(early) != 0 && d < f.Delay {
		t.Fatalf("a poll ending %v after the send began returned %d datagrams, before the delay %v", d, len(early), f.Delay)
	}
	got := append(early, collect(t, b, n-len(early), 5*time.Second)...)
	if d := time.Since(start); d < f.Delay {
		t.Fatalf("arrived after %v, less than the delay %v", d, f.Delay)
	}
	if len(got) != n {
		t.Fatalf("received %d of %d", len(got), n)
	}
	if st := a.Stats(); st.Delayed != n || st.Sent != n {
		t.Fatalf("stats %+v", st)
	}
	inversions := 0
	for _, c := range larger(t, got) {
		inversions += c
	}
	if inversions == 0 {
		t.Error("jitter reordered nothing")
	}
}

func TestPartition(t *testing.T) {
	a, b := pair(t, Faults{Seed: 1}, 256)
	a.SetPartitioned(true)
	if !a.Partitioned() {
		t.Fatal("Partitioned() = false after SetPartitioned(true)")
	}
	sendSeq(t, a, b.LocalEndpoint(), 0, 10, 4)
	if got := drain(t, b); len(got) != 0 {
		t.Fatalf("%d datagrams crossed the partition", len(got))
	}

	// Incoming datagrams are discarded too, by Poll and by Receive.
	sendSeq(t, b, a.LocalEndpoint(), 0, 3, 3)
	if got := drain(t, a); len(got) != 0 {
		t.Fatalf("Poll returned %d datagrams while cut", len(got))
	}
	res := make(chan uint64, 1)
	go func() {
		msgs := make([][]byte, 4)
		n, err := a.Receive(msgs)
		if err != nil || n != 1 {
			res <- 1 << 63
			return
		}
		s, _ := parse(msgs[0])
		res <- s
	}()
	sendSeq(t, b, a.LocalEndpoint(), 100, 105, 5)
	deadline := time.Now().Add(5 * time.Second)
	for a.Stats().CutIn < 8 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	a.SetPartitioned(false)
	sendSeq(t, b, a.LocalEndpoint(), 200, 201, 1)
	select {
	case s := <-res:
		if s != 200 {
			t.Fatalf("Receive returned seq %d, want 200 (the first after healing)", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not return after healing")
	}
	st := a.Stats()
	if st.CutOut != 10 || st.CutIn != 8 {
		t.Fatalf("CutOut %d CutIn %d, want 10 and 8", st.CutOut, st.CutIn)
	}
	sendSeq(t, a, b.LocalEndpoint(), 0, 5, 5)
	if got := drain(t, b); len(got) != 5 {
		t.Fatalf("received %d of 5 after healing", len(got))
	}
}

// settledGoroutines returns the goroutine count once goroutines of earlier
// tests have finished exiting.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 500 {
		time.Sleep(2 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

func TestCloseEndsGoroutinesAndDiscards(t *testing.T) {
	before := settledGoroutines()
	nw := mem.NewNetwork()
	dst, err := nw.Listen("dst")
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	var ports []*Port
	for i := range 8 {
		p, err := nw.Listen(string(rune('a' + i)))
		if err != nil {
			t.Fatal(err)
		}
		fp := Wrap(p, Faults{Seed: uint64(i), Delay: time.Hour, Reorder: 0.5})
		sendSeq(t, fp, dst.LocalEndpoint(), 0, 20, 3)
		ports = append(ports, fp)
	}
	if runtime.NumGoroutine() < before+len(ports) {
		t.Fatalf("%d goroutines, want at least %d", runtime.NumGoroutine(), before+len(ports))
	}
	for _, p := range ports {
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if st := p.Stats(); st.Discarded != 20 || st.Sent != 0 {
			t.Fatalf("stats after Close %+v: want 20 discarded", st)
		}
		if _, err := p.Send([]fabric.Datagram{makeDatagram(1, dst.LocalEndpoint())}); !errors.Is(err, fabric.ErrClosed) {
			t.Fatalf("Send after Close: %v, want ErrClosed", err)
		}
		if _, err := p.Receive(make([][]byte, 1)); !errors.Is(err, fabric.ErrClosed) {
			t.Fatalf("Receive after Close: %v, want ErrClosed", err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after Close, %d before Wrap", n, before)
	}
}

func TestCloseUnblocksReceive(t *testing.T) {
	a, _ := pair(t, Faults{}, 16)
	errc := make(chan error, 1)
	go func() {
		_, err := a.Receive(make([][]byte, 1))
		errc <- err
	}()
	a.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, fabric.ErrClosed) {
			t.Fatalf("Receive: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Receive still blocked after Close")
	}
}

func TestSetFaults(t *testing.T) {
	a, b := pair(t, Faults{Seed: 1, Loss: 1}, 256)
	sendSeq(t, a, b.LocalEndpoint(), 0, 10, 10)
	if got := drain(t, b); len(got) != 0 {
		t.Fatalf("%d datagrams through with Loss 1", len(got))
	}
	if err := a.SetFaults(Faults{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	sendSeq(t, a, b.LocalEndpoint(), 0, 10, 10)
	if got := drain(t, b); len(got) != 10 {
		t.Fatalf("%d of 10 through with no faults", len(got))
	}
	for _, bad := range []Faults{
		{Loss: -0.1}, {Duplicate: 1.5}, {Corrupt: nan()}, {Reorder: 2},
		{ReorderAfter: -1}, {ReorderDelay: -1}, {Delay: -time.Second}, {Jitter: -1},
	} {
		if err := a.SetFaults(bad); !errors.Is(err, ErrInvalidFaults) {
			t.Errorf("SetFaults(%+v) = %v, want ErrInvalidFaults", bad, err)
		}
	}
	if got := a.Faults(); got.Loss != 0 || got.ReorderAfter != DefaultReorderAfter {
		t.Fatalf("faults after rejected changes: %+v", got)
	}
	// Wrap clamps instead.
	other, err := mem.NewNetwork().Listen("x")
	if err != nil {
		t.Fatal(err)
	}
	w := Wrap(other, Faults{Loss: 7, Delay: -1})
	defer w.Close()
	if w.Unwrap() != other {
		t.Fatal("Unwrap did not return the wrapped port")
	}
	if c := w.Faults(); c.Loss != 1 || c.Delay != 0 {
		t.Fatalf("Wrap did not clamp: %+v", w.Faults())
	}
}

func nan() float64 { z := 0.0; return z / z }

func TestTooBig(t *testing.T) {
	nw := mem.NewNetwork()
	nw.MaxDatagram = 100
	a, _ := nw.Listen("a")
	b, _ := nw.Listen("b")
	defer b.Close()
	fa := Wrap(a, Faults{Seed: 1})
	defer fa.Close()
	dgs := []fabric.Datagram{
		makeDatagram(1, b.LocalEndpoint()),
		{Head: make([]byte, 50), Body: make([]byte, 51), To: b.LocalEndpoint()},
		makeDatagram(2, b.LocalEndpoint()),
	}
	n, err := fa.Send(dgs)
	if n != 1 || !errors.Is(err, fabric.ErrTooBig) {
		t.Fatalf("Send = %d, %v; want 1, ErrTooBig", n, err)
	}
	if got := drain(t, b); len(got) != 1 {
		t.Fatalf("received %d, want the 1 before the big one", len(got))
	}
}

func TestCallerBuffersNotRetained(t *testing.T) {
	a, b := pair(t, Faults{Seed: 11, Delay: time.Millisecond, Duplicate: 0.5, Corrupt: 0.2}, 1024)
	dgs := make([]fabric.Datagram, 50)
	for i := range dgs {
		dgs[i] = makeDatagram(uint64(i), b.LocalEndpoint())
	}
	if _, err := a.Send(dgs); err != nil {
		t.Fatal(err)
	}
	for i := range dgs { // scribble over what was sent
		clear(dgs[i].Head)
		clear(dgs[i].Body)
	}
	st := a.Stats()
	got := collect(t, b, 50+int(st.Duplicated), 5*time.Second)
	bad := 0
	for _, m := range got {
		if _, ok := parse(m); !ok {
			bad++
		}
	}
	if bad > 2*int(st.Corrupted) {
		t.Fatalf("%d damaged datagrams, only %d corrupted: the caller's buffers were kept", bad, st.Corrupted)
	}
}

// Concurrent senders, the timer goroutine and SetFaults together: every
// datagram offered is accounted for once everything held has gone out.
func TestConcurrentConservation(t *testing.T) {
	const senders, each = 4, 500
	f := Faults{Seed: 13, Loss: 0.1, Duplicate: 0.1, Reorder: 0.1, ReorderDelay: time.Millisecond, Jitter: 200 * time.Microsecond}
	a, b := pair(t, f, 2*senders*each)
	done := make(chan struct{})
	for s := range senders {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				dg := []fabric.Datagram{makeDatagram(uint64(s*each+i), b.LocalEndpoint())}
				if _, err := a.Send(dg); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() {
		defer func() { done <- struct{}{} }()
		for i := range 20 {
			g := f
			g.Loss = float64(i%3) / 10
			if err := a.SetFaults(g); err != nil {
				t.Error(err)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	for range senders + 1 {
		<-done
	}
	var st Stats
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		st = a.Stats()
		if st.Sent == st.Offered-st.Dropped+st.Duplicated {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if st.Offered != senders*each || st.Sent != st.Offered-st.Dropped+st.Duplicated {
		t.Fatalf("stats do not add up: %+v", st)
	}
	if got := drain(t, b); uint64(len(got)) != st.Sent {
		t.Fatalf("received %d, sent %d", len(got), st.Sent)
	}
}
