package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Small messages stored unexpected in runs (runs.go) are received exactly
// as if each had a block of its own: per key in order, a wildcard receive
// gets the earliest of the thread's messages, Iprobe reports the first
// one's length, a receive into a small buffer is truncated, data handed
// over stays intact after its run's storage is reused, and every byte of
// budget comes back, also for messages still in runs at Close.
func TestRunsKeepOrder(t *testing.T) {
	e0, e1 := memPair(t, Config{})
	// A guard against a hang, not a timing.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const dst = 7
	rng := rand.New(rand.NewPCG(1, 2))
	type msg struct {
		tag  Tag
		data string
	}
	var sent []msg
	tx := e0.Endpoint(1)
	rx := e1.Endpoint(dst)
	var kept [][]byte // data handed over (the request is the endpoint's own)
	var keptWant []string
	// First a whole run received with no buffer: every message, its
	// last included, is handed over in storage of its own, which the
	// runs stored after it do not overwrite.
	var one []*Request
	for i := range 50 {
		one = append(one, tx.Isend(1, dst, 5, []byte(fmt.Sprint("run message ", i))))
	}
	for _, r := range one {
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		r, err := rx.Recv(ctx, 0, 1, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		kept, keptWant = append(kept, r.Data()), append(keptWant, fmt.Sprint("run message ", i))
	}
	// Runs of one tag, of 1 to 60 messages, of tags 1-3, sizes 0-200 B.
	for len(sent) < 1500 {
		tag := Tag(1 + rng.IntN(3))
		for range 1 + rng.IntN(60) {
			b := make([]byte, rng.IntN(200))
			for i := range b {
				b[i] = byte(len(sent) + i)
			}
			copy(b, fmt.Sprint(len(sent)))
			sent = append(sent, msg{tag, string(b)})
		}
	}
	reqs := make([]*Request, len(sent))
	for i, m := range sent {
		reqs[i] = tx.Isend(1, dst, m.tag, []byte(m.data))
	}
	for i, r := range reqs {
		if err := r.Wait(ctx); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	// All are stored (their bytes held of the budget) before the first
	// receive.
	total := 0
	for _, m := range sent {
		total += len(m.data)
	}
	for i := 0; e1.BudgetUsed() < int64(total); i++ {
		if i > 10000 {
			t.Fatalf("messages not stored: %d blocks in use, budget %d", e1.pool.inUse(), e1.BudgetUsed())
		}
		time.Sleep(time.Millisecond)
	}
	if n := e1.pool.inUse(); n >= len(sent)/2 {
		t.Fatalf("%d blocks in use for %d messages in runs of one tag: no runs made", n, len(sent))
	}
	left := sent
	for len(left) > 200 {
		// The model: an exact receive takes its tag's first message
		// left, a wildcard one the first of all.
		tag := AnyTag
		if rng.IntN(3) > 0 {
			tag = Tag(1 + rng.IntN(3))
		}
		j := 0
		for j < len(left) && tag != AnyTag && left[j].tag != tag {
			j++
		}
		if j == len(left) {
			continue
		}
		want := left[j]
		if st, ok := rx.Iprobe(0, 1, tag); !ok || st.Len != len(want.data) || st.Tag != want.tag {
			t.Fatalf("Iprobe tag %d: %+v %v, want tag %d length %d", tag, st, ok, want.tag, len(want.data))
		}
		var buf []byte
		switch rng.IntN(4) {
		case 0: // handed over
		case 1:
			buf = make([]byte, 5)
		default:
			buf = make([]byte, 256)
		}
		r, err := rx.Recv(ctx, 0, 1, tag, buf)
		trunc := buf != nil && len(buf) < len(want.data)
		if trunc != (err == ErrTruncated) || err != nil && err != ErrTruncated {
			t.Fatalf("receive of tag %d (%d left): %v, truncation expected %v", tag, len(left), err, trunc)
		}
		got, w := string(r.Data()), want.data
		if trunc {
			w = w[:len(buf)]
		}
		if got != w || r.Tag() != want.tag {
			t.Fatalf("receive of tag %d (%d left): tag %d %q, want tag %d %q", tag, len(left), r.Tag(), got, want.tag, w)
		}
		if buf == nil {
			kept, keptWant = append(kept, r.Data()), append(keptWant, w)
		}
		left = append(left[:j:j], left[j+1:]...)
	}
	// Stored again over reused run storage: what was handed over stays.
	more := make([]*Request, 300)
	for i := range more {
		more[i] = tx.Isend(1, dst, 9, []byte("overwrite overwrite overwrite"))
	}
	for _, r := range more {
		if err := r.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; ; i++ {
		if _, ok := rx.Iprobe(0, 1, 9); ok {
			break
		}
		if i > 10000 {
			t.Fatal("tag 9 not stored")
		}
		time.Sleep(time.Millisecond)
	}
	for i, d := range kept {
		if string(d) != keptWant[i] {
			t.Fatalf("handed-over message %d changed: %q, want %q", i, d, keptWant[i])
		}
	}
	e1.Close()
	if n := e1.BudgetUsed(); n != 0 {
		t.Fatalf("budget after Close with messages in runs: %d, want 0", n)
	}
}

// The storage of runs counts in the receive budget: runs of two one-byte
// messages, of alternating tags, would each hold a run's storage (runBytes)
// for two bytes, and the storage the runs hold stays within RecvBudget;
// every byte of it comes back when the messages are received.
func TestRunStorageInBudget(t *testing.T) {
	const budget = 256 << 10
	e0, e1 := memPair(t, Config{RecvBudget: budget})
	// A guard against a hang, not a timing.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const dst, pairs = 7, 200
	tx, rx := e0.Endpoint(1), e1.Endpoint(dst)
	for i := range pairs {
		for j := range 2 {
			if err := tx.Send(ctx, 1, dst, Tag(1+i%2), []byte{byte(2*i + j)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; e1.Stats()[0].MessagesRecv < 2*pairs; i++ {
		if i > 10000 {
			t.Fatalf("%d of %d messages stored", e1.Stats()[0].MessagesRecv, 2*pairs)
		}
		time.Sleep(time.Millisecond)
	}
	runs := 2*pairs - e1.mcbsInUse() // a block holding a run holds two messages
	if held := int64(runs) * runBytes; held > budget {
		t.Errorf("%d runs hold %d bytes of storage, budget %d", runs, held, budget)
	}
	if used := e1.BudgetUsed(); used < int64(runs)*runBytes {
		t.Errorf("budget used %d, below the %d bytes of storage of %d runs", used, int64(runs)*runBytes, runs)
	}
	for i := range pairs {
		for j := range 2 {
			r, err := rx.Recv(ctx, 0, 1, Tag(1+i%2), nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := r.Data(); len(d) != 1 || d[0] != byte(2*i+j) {
				t.Fatalf("pair %d message %d: %v", i, j, d)
			}
		}
	}
	if used := e1.BudgetUsed(); used != 0 {
		t.Errorf("budget used %d after every message was received", used)
	}
}
