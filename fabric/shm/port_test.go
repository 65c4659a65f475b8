package shm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/testdir"
)

// testDir makes a segment directory on tmpfs for one test.
func testDir(t testing.TB) string {
	t.Helper()
	// A directory of a killed run is removed by the next (testdir).
	d, err := testdir.Make(DefaultDir, "pcor-shm-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func listen(t testing.TB, dir, name string, cfg Config) *Port {
	t.Helper()
	cfg.Dir = dir
	p, err := Listen(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// recvN receives exactly n datagrams (copied), failing after a deadline.
func recvN(t testing.TB, p *Port, n int) [][]byte {
	t.Helper()
	msgs := make([][]byte, p.BatchSize())
	var got [][]byte
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < n {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d datagrams", len(got), n)
		}
		k, err := p.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:k] {
			got = append(got, append([]byte(nil), m...))
		}
		if k == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return got
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed)
	}
	return b
}

func TestSizesAndOrder(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	to, err := a.ParseEndpoint(b.LocalEndpoint().String())
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{0, 1, 7, 8, 9, 95, 96, 1000, 4096, 65000, DefaultMaxDatagram}
	var want [][]byte
	for i, n := range sizes {
		head := pattern(n/3, i)
		body := pattern(n-n/3, i+100)
		if _, err := a.Send([]fabric.Datagram{{Head: head, Body: body, To: to}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, append(head, body...))
	}
	got := recvN(t, b, len(sizes))
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("datagram %d (%d bytes) differs", i, len(want[i]))
		}
	}
	if _, err := a.Send([]fabric.Datagram{{Body: make([]byte, DefaultMaxDatagram+1), To: to}}); !errors.Is(err, fabric.ErrTooBig) {
		t.Fatalf("oversized datagram: %v, want ErrTooBig", err)
	}
}

// TestWrapAround pushes many times the ring's size through a small ring,
// with sizes that leave every possible gap at the ring's end.
func TestWrapAround(t *testing.T) {
	dir := testDir(t)
	cfg := Config{RingSize: MinRingSize, MaxDatagram: MinRingSize / 4}
	a, b := listen(t, dir, "a", cfg), listen(t, dir, "b", cfg)
	to := b.LocalEndpoint()
	const count = 5000
	done := make(chan error, 1)
	go func() {
		for i := 0; i < count; i++ {
			n := (i * 997) % (cfg.MaxDatagram - 4)
			body := pattern(n+4, i)
			binary.LittleEndian.PutUint32(body, uint32(i))
			if _, err := a.Send([]fabric.Datagram{{Body: body, To: to}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	msgs := make([][]byte, b.BatchSize())
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < count; {
		k, err := b.Wait(msgs, deadline)
		if err != nil {
			t.Fatalf("after %d of %d datagrams: %v", i, count, err)
		}
		for _, m := range msgs[:k] {
			n := (i * 997) % (cfg.MaxDatagram - 4)
			want := pattern(n+4, i)
			binary.LittleEndian.PutUint32(want, uint32(i))
			if !bytes.Equal(m, want) {
				t.Fatalf("datagram %d: %d bytes, want %d", i, len(m), len(want))
			}
			i++
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); s.Full == 0 {
		t.Errorf("sender never waited for room: the test did not fill the ring (%+v)", s)
	}
}

// TestFullRingWakesSender has a sender fill a small ring while nothing
// reads it, until it sleeps waiting for room, then reads: the reads must
// wake the sender, which otherwise would sleep an hour.
func TestFullRingWakesSender(t *testing.T) {
	defer func(d time.Duration) { roomWait = d }(roomWait)
	roomWait = time.Hour
	dir := testDir(t)
	cfg := Config{RingSize: MinRingSize, MaxDatagram: MinRingSize / 4}
	a, b := listen(t, dir, "a", cfg), listen(t, dir, "b", cfg)
	const count = 64 // eight rings' worth
	done := make(chan error, 1)
	go func() {
		for i := 0; i < count; i++ {
			if _, err := a.Send([]fabric.Datagram{{Body: pattern(MinRingSize/8, i), To: b.LocalEndpoint()}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	deadline := time.Now().Add(20 * time.Second)
	for a.Stats().RoomWaits == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the sender never slept for room (%+v)", a.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	for i, m := range recvN(t, b, count) {
		if !bytes.Equal(m, pattern(MinRingSize/8, i)) {
			t.Fatalf("datagram %d differs", i)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", a.Stats())
}

// TestManySenders has several ports, each with several goroutines, send
// to one receiver; every datagram arrives once and each sender's arrive in
// order.
func TestManySenders(t *testing.T) {
	dir := testDir(t)
	recv := listen(t, dir, "r", Config{})
	const ports, goroutines, each = 4, 3, 2000
	var wg sync.WaitGroup
	for p := 0; p < ports; p++ {
		s := listen(t, dir, "s"+string(rune('0'+p)), Config{})
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func(id int) {
				defer wg.Done()
				var body [8]byte
				for i := 0; i < each; i++ {
					binary.LittleEndian.PutUint32(body[:], uint32(id))
					binary.LittleEndian.PutUint32(body[4:], uint32(i))
					if _, err := s.Send([]fabric.Datagram{{Body: body[:], To: recv.LocalEndpoint()}}); err != nil {
						t.Error(err)
						return
					}
				}
			}(p*goroutines + g)
		}
	}
	got := recvN(t, recv, ports*goroutines*each)
	wg.Wait()
	next := make([]uint32, ports*goroutines)
	for _, m := range got {
		id, i := binary.LittleEndian.Uint32(m), binary.LittleEndian.Uint32(m[4:])
		if i != next[id] {
			t.Fatalf("sender %d: datagram %d after %d", id, i, next[id])
		}
		next[id]++
	}
}

// TestBlockingReceiveWakes checks that a receiver asleep on the doorbell
// wakes for a datagram, and that Close ends a blocked Receive.
func TestBlockingReceiveWakes(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	msgs := make([][]byte, 4)
	got := make(chan error, 1)
	go func() {
		n, err := b.Receive(msgs)
		if err == nil && (n != 1 || string(msgs[0]) != "wake") {
			err = errors.New("wrong datagram")
		}
		got <- err
	}()
	// Let the receiver go to sleep.
	deadline := time.Now().Add(5 * time.Second)
	for b.Stats().Sleeps == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if b.Stats().Sleeps == 0 {
		t.Fatal("receiver never slept")
	}
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("wake"), To: b.LocalEndpoint()}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("receiver did not wake")
	}
	if a.Stats().Wakes == 0 {
		t.Error("sender never rang the doorbell")
	}

	go func() { _, err := b.Receive(msgs); got <- err }()
	time.Sleep(20 * time.Millisecond)
	b.Close()
	select {
	case err := <-got:
		if !errors.Is(err, fabric.ErrClosed) {
			t.Fatalf("Receive after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a blocked Receive")
	}
	if _, err := os.Stat(filepath.Join(dir, filePrefix+"b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("segment left after Close: %v", err)
	}
}

// TestClosedReceiverDrops checks that a sender to a closed port neither
// blocks nor fails: the datagrams are dropped and counted.
func TestClosedReceiverDrops(t *testing.T) {
	dir := testDir(t)
	cfg := Config{RingSize: MinRingSize, MaxDatagram: 1024}
	a, b := listen(t, dir, "a", cfg), listen(t, dir, "b", cfg)
	to := b.LocalEndpoint()
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("x"), To: to}}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 200; i++ { // more than the ring holds
			if _, err := a.Send([]fabric.Datagram{{Body: make([]byte, 1000), To: to}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Send to a closed port blocked")
	}
	if a.Stats().Dropped == 0 {
		t.Error("nothing counted as dropped")
	}
}

// TestSlotReleasedOnClose checks that a sender's Close frees its slot in
// the receiver's segment, so that a receiver with one slot serves the next
// sender.
func TestSlotReleasedOnClose(t *testing.T) {
	dir := testDir(t)
	recv := listen(t, dir, "r", Config{Slots: 1})
	for i := 0; i < 3; i++ {
		s := listen(t, dir, "s"+string(rune('0'+i)), Config{})
		var err error
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err = s.Send([]fabric.Datagram{{Body: []byte{byte(i)}, To: recv.LocalEndpoint()}})
			if !errors.Is(err, ErrNoSlot) || time.Now().After(deadline) {
				break
			}
			recv.Poll(make([][]byte, 1)) // let the receiver scan its slots
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("sender %d: %v", i, err)
		}
		if got := recvN(t, recv, 1); got[0][0] != byte(i) {
			t.Fatalf("sender %d: got %v", i, got[0])
		}
		s.Close()
	}
	if recv.Stats().Reclaimed < 2 {
		t.Errorf("reclaimed %d slots, want 2", recv.Stats().Reclaimed)
	}
}

// TestReusedSlotStartsEmpty: a slot freed by a sender that left and
// claimed by the next holds the first sender's records still; the
// receiver must find it empty until the new sender writes, and then read
// the new sender's datagram alone.
func TestReusedSlotStartsEmpty(t *testing.T) {
	dir := testDir(t)
	recv := listen(t, dir, "r", Config{Slots: 1})
	to := recv.LocalEndpoint()
	old := listen(t, dir, "old", Config{})
	for i := 0; i < 3; i++ {
		if _, err := old.Send([]fabric.Datagram{{Body: []byte("stale"), To: to}}); err != nil {
			t.Fatal(err)
		}
	}
	recvN(t, recv, 3)
	old.Close()
	msgs := make([][]byte, recv.BatchSize())
	deadline := time.Now().Add(20 * time.Second)
	for recv.Stats().Reclaimed == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the receiver never freed the slot of the sender that left")
		}
		recv.scanDue.Store(true)
		if n, err := recv.Poll(msgs); n != 0 || err != nil {
			t.Fatalf("Poll before the slot was freed: %d, %v", n, err)
		}
	}
	next := listen(t, dir, "next", Config{})
	// The new sender claims the slot; the receiver looks before it writes.
	if _, err := next.outTo(to.(Endpoint)); err != nil {
		t.Fatal(err)
	}
	if n, err := recv.Poll(msgs); n != 0 || err != nil {
		t.Fatalf("Poll of the reused slot before its sender wrote: %d, %v", n, err)
	}
	if _, err := next.Send([]fabric.Datagram{{Body: []byte("new"), To: to}}); err != nil {
		t.Fatal(err)
	}
	got := recvN(t, recv, 1)
	if string(got[0]) != "new" {
		t.Fatalf("first datagram in the reused slot: %q, want \"new\"", got[0])
	}
	if n, err := recv.Poll(msgs); n != 0 || err != nil {
		t.Fatalf("Poll after the new sender's only datagram: %d, %v", n, err)
	}
}

// TestAppendToDatagramLeavesRing: a datagram received aliases the ring,
// but an append to it must not write into the ring over the next one.
func TestAppendToDatagramLeavesRing(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	for _, s := range []string{"first", "second"} {
		if _, err := a.Send([]fabric.Datagram{{Body: []byte(s), To: b.LocalEndpoint()}}); err != nil {
			t.Fatal(err)
		}
	}
	msgs := make([][]byte, 2)
	if n, err := b.Poll(msgs); n != 2 || err != nil {
		t.Fatalf("Poll: %d, %v", n, err)
	}
	_ = append(msgs[0], bytes.Repeat([]byte{'x'}, 64)...)
	if string(msgs[1]) != "second" {
		t.Fatalf("an append to the first datagram changed the second: %q", msgs[1])
	}
}

// TestStaleTailHint: the producer's tail is only a hint of how far the
// records go. A receiver that reads it before the producer's last store
// to it lands still reads every record published, a batch ending early.
func TestStaleTailHint(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	for _, s := range []string{"one", "two", "three"} {
		if _, err := a.Send([]fabric.Datagram{{Body: []byte(s), To: b.LocalEndpoint()}}); err != nil {
			t.Fatal(err)
		}
	}
	o := a.out["b"]
	atomic.StoreUint64(o.r.tail, 0)
	var got []string
	msgs := make([][]byte, b.BatchSize())
	for i := 0; i < 10 && len(got) < 3; i++ {
		n, err := b.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			got = append(got, string(m))
		}
	}
	if strings.Join(got, ",") != "one,two,three" {
		t.Fatalf("with a stale tail: %q", got)
	}
}

// TestTailOnlyWhenStreamed: a receiver that found a ring empty at its last
// look takes the record it finds there alone, without reading the
// producer's tail (a ping-pong's message moves no third line between the
// processors); one that found records at its last look too reads the tail
// and takes the rest in one batch, as does the first look at a new ring.
func TestTailOnlyWhenStreamed(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	msgs := make([][]byte, b.BatchSize())
	poll := func() int {
		t.Helper()
		n, err := b.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The first look at a new ring takes all it holds (records may have
	// queued up before it was looked at).
	for range 2 {
		if _, err := a.Send([]fabric.Datagram{{Body: []byte("x"), To: b.LocalEndpoint()}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := poll(); n != 2 {
		t.Fatalf("first look at a new ring took %d records, want 2", n)
	}
	if n := poll(); n != 0 {
		t.Fatalf("%d records after all were taken", n)
	}
	for round := 0; round < 3; round++ {
		for range 4 {
			if _, err := a.Send([]fabric.Datagram{{Body: []byte("x"), To: b.LocalEndpoint()}}); err != nil {
				t.Fatal(err)
			}
		}
		if n := poll(); n != 1 {
			t.Fatalf("round %d: first look at a ring found empty before took %d records, want 1", round, n)
		}
		if n := poll(); n != 3 {
			t.Fatalf("round %d: next look took %d records, want the 3 left in one batch", round, n)
		}
		if n := poll(); n != 0 {
			t.Fatalf("round %d: %d records after all were taken", round, n)
		}
	}
}

// TestCorruptRing writes a record length no ring can hold into a sender's
// slot: the receiver counts the ring as corrupt and neither panics nor
// returns out-of-bounds memory.
func TestCorruptRing(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("ok"), To: b.LocalEndpoint()}}); err != nil {
		t.Fatal(err)
	}
	recvN(t, b, 1)
	o := a.out["b"]
	*o.r.header(o.r.pos & o.r.mask) = recordWord(1 << 30)
	n, err := b.Poll(make([][]byte, 8))
	if err != nil || n != 0 {
		t.Fatalf("Poll over a corrupt ring: %d, %v", n, err)
	}
	if b.Stats().Corrupt != 1 {
		t.Fatalf("corrupt count %d", b.Stats().Corrupt)
	}
}

func TestEndpoints(t *testing.T) {
	dir := testDir(t)
	a := listen(t, dir, "a", Config{})
	for _, s := range []string{"", "nohost", "h/", "/n", "h/bad name", "h/../x"} {
		if _, err := ParseEndpoint(s); !errors.Is(err, ErrBadEndpoint) {
			t.Errorf("ParseEndpoint(%q) = %v, want ErrBadEndpoint", s, err)
		}
	}
	if _, err := a.ParseEndpoint("0123456789abcdef/x"); !errors.Is(err, ErrOtherHost) {
		t.Errorf("foreign host: %v, want ErrOtherHost", err)
	}
	other := testDir(t) // another tmpfs directory is another memory domain
	b := listen(t, other, "b", Config{})
	if a.LocalEndpoint().(Endpoint).Host == b.LocalEndpoint().(Endpoint).Host {
		t.Error("two directories share a host identity")
	}
	if _, err := Listen("a", Config{Dir: dir}); !errors.Is(err, ErrAddrInUse) {
		t.Errorf("second Listen on a name: %v, want ErrAddrInUse", err)
	}
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("x"), To: Endpoint{Host: a.local.Host, Name: "nobody"}}}); err != nil {
		t.Errorf("send to no port: %v, want a drop", err)
	}
}

// TestSendReachesNewReceiverUnderName checks that a sender whose receiver
// closed reaches the port that listens under the same name next: the ring
// a sender remembers from its last send (Port.lastOut) is looked up again
// once its receiver is known gone, not written to (dropped) for ever.
func TestSendReachesNewReceiverUnderName(t *testing.T) {
	dir := testDir(t)
	cfg := Config{RingSize: MinRingSize, MaxDatagram: 1024}
	a, b := listen(t, dir, "a", cfg), listen(t, dir, "b", cfg)
	to := b.LocalEndpoint()
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("x"), To: to}}); err != nil {
		t.Fatal(err)
	}
	recvN(t, b, 1)
	b.Close()
	b2 := listen(t, dir, "b", cfg)
	msgs := make([][]byte, b2.BatchSize())
	body := make([]byte, 1000)
	deadline := time.Now().Add(10 * time.Second)
	// The old ring fills after about 64 datagrams; the sender then finds
	// its receiver gone and marks it so.
	for i := 0; i < 5000 && time.Now().Before(deadline); i++ {
		if _, err := a.Send([]fabric.Datagram{{Body: body, To: to}}); err != nil {
			t.Fatal(err)
		}
		n, err := b2.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
	}
	t.Fatalf("the port listening under the old name received nothing (dropped %d)", a.Stats().Dropped)
}
