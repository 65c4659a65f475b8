package pcor_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// An Isend of a small message to another process is done as soon as it
// returns, and the sender may overwrite its data at once: every message
// arrives intact and in order. Past the bound on copies awaiting their
// acknowledgement, Isend waits for acceptance instead.
func TestIsendCompletesOnCopy(t *testing.T) {
	a, c := udpPair(t, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 3000
	data := make([]byte, 200)
	copied := 0
	var pending []*pcor.Request
	for i := range n {
		fill(data, i)
		r := ta.Isend(tc.Addr(), 1, data)
		if done, err := r.Test(); err != nil {
			t.Fatalf("message %d: %v", i, err)
		} else if done {
			copied++
			clear(data) // the copy, not data, is sent
		} else {
			pending = append(pending, r) // more than 1024 copies unacknowledged
			data = make([]byte, len(data))
		}
	}
	if copied < 1024 {
		t.Fatalf("%d of %d small messages done when Isend returned, want at least 1024", copied, n)
	}
	want := make([]byte, len(data))
	buf := make([]byte, len(data))
	for i := range n {
		m, err := tc.RecvInto(ctx, ta.Addr(), 1, buf)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		fill(want, i)
		if !bytes.Equal(m.Data, want) {
			t.Fatalf("message %d arrived as %x..., want %x...", i, m.Data[:8], want[:8])
		}
	}
	for _, r := range pending {
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d messages done when Isend returned", copied, n)

	// A large message is not copied: done once accepted. It goes to a
	// process that never answers (a socket nobody reads), so that it
	// cannot be accepted before it is looked at: to a live one it was,
	// now and then, by the time Isend returned on a loaded machine. A
	// small message to it is copied and done at once.
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if err := a.AddPeer(pcor.Peer{Proc: 2, Addr: silent.LocalAddr().String()}); err != nil {
		t.Fatal(err)
	}
	nobody := pcor.Addr{Proc: 2, Thread: 0}
	if done, err := ta.Isend(nobody, 2, data).Test(); !done || err != nil {
		t.Fatalf("a small message to a silent process: done %v, %v; want done when Isend returned", done, err)
	}
	big := make([]byte, pcor.EagerLimit+1)
	r := ta.Isend(nobody, 2, big)
	if done, err := r.Test(); done {
		t.Fatalf("a message larger than EagerLimit was done when Isend returned (%v)", err)
	}
	r.Cancel()
	// And to a live process it arrives, and its request completes.
	r = ta.Isend(tc.Addr(), 2, big)
	if _, err := tc.Recv(ctx, ta.Addr(), 2); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func fill(b []byte, i int) {
	for j := range b {
		b[j] = byte(i + j*7 + i>>8)
	}
}

// A copied Isend to a process that no longer answers is done without
// error; the failure is reported by a later send to that process.
func TestIsendCopyLateFailure(t *testing.T) {
	a, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey, Listen: []pcor.Listen{{Mode: pcor.Blocking}},
		UnreachableTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey, Listen: []pcor.Listen{{Mode: pcor.Blocking}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddPeer(pcor.Peer{Proc: 1, Addr: c.Endpoints()[0].Addr}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	ta := a.NewThread()
	dst := pcor.Addr{Proc: 1}
	if err := ta.Isend(dst, 1, []byte("into the void")).Wait(context.Background()); err != nil {
		t.Fatalf("Isend = %v, want nil (the failure comes later)", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := ta.Isend(dst, 1, []byte("again")).Wait(context.Background())
		if errors.Is(err, pcor.ErrUnreachable) {
			break
		}
		if err != nil {
			t.Fatalf("Isend = %v, want ErrUnreachable", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("a dead destination was never reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ta.Send(ctx, dst, 1, []byte("blocking")); !errors.Is(err, pcor.ErrUnreachable) {
		t.Fatalf("Send after the failure = %v, want ErrUnreachable", err)
	}
}

// A stream of copied Isends, drained by a receiver into its own buffer,
// allocates nothing per message once the pools are warm.
func TestIsendCopyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	a, c := udpPair(t, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	ctx := context.Background()
	msg, buf := a.Alloc(64), c.Alloc(64)
	reqs := make([]*pcor.Request, 8) // kept as a sender keeps its window
	round := func() {
		for i := range reqs {
			reqs[i] = ta.Isend(tc.Addr(), 1, msg)
		}
		for _, r := range reqs {
			if err := r.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for range 8 {
			if _, err := tc.RecvInto(ctx, ta.Addr(), 1, buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 200 {
		round() // warm the pools
	}
	if n := testing.AllocsPerRun(500, round) / 8; n > 0.1 {
		t.Fatalf("%.2f allocations per message", n)
	}
}

// The same stream over shared memory allocates nothing per message even
// with two garbage collections before every round: the engine keeps the
// requests and buffers of copied sends itself, where a sync.Pool,
// emptied by two collections, made them all again.
func TestIsendCopyAllocsAcrossGC(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	a, c := shmPair(t)
	ta, tc := a.NewThread(), c.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msg, buf := a.Alloc(64), c.Alloc(64)
	reqs := make([]*pcor.Request, 32)
	round := func() {
		runtime.GC()
		runtime.GC()
		for i := range reqs {
			reqs[i] = ta.Isend(tc.Addr(), 1, msg)
		}
		for _, r := range reqs {
			if err := r.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for range reqs {
			if _, err := tc.RecvInto(ctx, ta.Addr(), 1, buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 20 {
		round()
	}
	// The fabric's look whether its peer lives (every 10 ms) allocates
	// nothing; it read /proc with about 10 allocations (0.2-0.4 a message
	// here). What is left is one or two a round, not a message's.
	if n := testing.AllocsPerRun(10, round) / float64(len(reqs)); n > 0.15 {
		t.Fatalf("%.2f allocations per message", n)
	}
}
