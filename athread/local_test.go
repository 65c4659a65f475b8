package athread

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var fibLocal *Func[int, int]

func init() {
	fibLocal = Local(func(ctx context.Context, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		a := Create(ctx, fibLocal, n-1)
		b := Create(ctx, fibLocal, n-2)
		x, err := a.Join(ctx)
		if err != nil {
			return 0, err
		}
		y, err := b.Join(ctx)
		return x + y, err
	})
}

func fibSeq(n int) int {
	if n < 2 {
		return n
	}
	return fibSeq(n-1) + fibSeq(n-2)
}

// checkGoroutines fails the test if goroutines started during it are still
// running shortly after it ends.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Errorf("%d goroutines left behind (%d before):\n%s", runtime.NumGoroutine()-before, before, buf[:n])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

func newLocal(t *testing.T, vps int) *Runtime {
	t.Helper()
	checkGoroutines(t)
	rt, err := New(context.Background(), Config{VPs: vps, Registry: NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func TestFib(t *testing.T) {
	for _, vps := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(vps), func(t *testing.T) {
			rt := newLocal(t, vps)
			ctx := rt.Context()
			got, err := Create(ctx, fibLocal, 20).Join(ctx)
			if err != nil || got != fibSeq(20) {
				t.Fatalf("fib(20) = %d, %v; want %d", got, err, fibSeq(20))
			}
			c := rt.Counters()
			if c.Threads != c.TasksRun || c.Threads < 20000 {
				t.Fatalf("counters: %+v", c)
			}
		})
	}
}

// Results come back to the handle they belong to, whatever order the
// threads finish in.
func TestJoinOrder(t *testing.T) {
	rt := newLocal(t, 4)
	ctx := rt.Context()
	sq := Local(func(ctx context.Context, i int) (int, error) {
		if i%7 == 0 {
			time.Sleep(time.Millisecond)
		}
		return i * i, nil
	})
	const n = 5000
	hs := make([]*Handle[int], n)
	for i := range hs {
		hs[i] = Create(ctx, sq, i)
	}
	for i := n - 1; i >= 0; i-- {
		v, err := hs[i].Join(ctx)
		if err != nil || v != i*i {
			t.Fatalf("thread %d: %d, %v", i, v, err)
		}
	}
	// Joined again: same result.
	if v, _ := hs[3].Join(ctx); v != 9 {
		t.Fatalf("second join: %d", v)
	}
}

// A thread joins a thread another thread created; the joined handle
// travels through a channel.
func TestJoinFromAnotherThread(t *testing.T) {
	rt := newLocal(t, 2)
	ctx := rt.Context()
	handles := make(chan *Handle[int], 1)
	producer := Go(ctx, func(ctx context.Context) (int, error) {
		h := Create(ctx, Local(func(ctx context.Context, x int) (int, error) {
			time.Sleep(2 * time.Millisecond)
			return x + 1, nil
		}), 41)
		handles <- h
		return 0, nil
	})
	consumer := Go(ctx, func(ctx context.Context) (int, error) {
		select {
		case h := <-handles:
			return h.Join(ctx)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	})
	if _, err := producer.Join(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := consumer.Join(ctx); err != nil || v != 42 {
		t.Fatalf("consumer: %d, %v", v, err)
	}
}

// Deep recursion with every level joining: a chain of 10000 nested
// threads.
func TestNestedChain(t *testing.T) {
	rt := newLocal(t, 2)
	var chain *Func[int, int]
	chain = Local(func(ctx context.Context, n int) (int, error) {
		if n == 0 {
			return 0, nil
		}
		v, err := Create(ctx, chain, n-1).Join(ctx)
		return v + 1, err
	})
	ctx := rt.Context()
	if v, err := Create(ctx, chain, 10000).Join(ctx); err != nil || v != 10000 {
		t.Fatalf("chain: %d, %v", v, err)
	}
}

func TestPanicBecomesError(t *testing.T) {
	rt := newLocal(t, 2)
	ctx := rt.Context()
	bad := Local(func(ctx context.Context, n int) (int, error) {
		if n == 3 {
			panic(fmt.Sprintf("boom at %d", n))
		}
		return n, nil
	})
	sum := 0
	parent := Go(ctx, func(ctx context.Context) (int, error) {
		var hs []*Handle[int]
		for i := 0; i < 6; i++ {
			hs = append(hs, Create(ctx, bad, i))
		}
		var first error
		for _, h := range hs {
			v, err := h.Join(ctx)
			if err != nil && first == nil {
				first = err
			}
			sum += v
		}
		return sum, first
	})
	_, err := parent.Join(ctx)
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("want a PanicError, got %v", err)
	}
	if !strings.Contains(string(pe.Stack), "local_test.go") || pe.Value != "boom at 3" {
		t.Fatalf("panic error without the stack or value: %v", pe)
	}
	if sum != 0+1+2+4+5 {
		t.Fatalf("the other threads' sum is %d", sum)
	}
	// The runtime still works.
	if v, err := Create(ctx, fibLocal, 10).Join(ctx); err != nil || v != 55 {
		t.Fatalf("after the panic: %d %v", v, err)
	}
}

func TestErrorReturned(t *testing.T) {
	rt := newLocal(t, 2)
	ctx := rt.Context()
	errBad := errors.New("bad input")
	h := Create(ctx, Local(func(ctx context.Context, n int) (int, error) { return 7, errBad }), 1)
	if v, err := h.Join(ctx); !errors.Is(err, errBad) || v != 0 {
		t.Fatalf("got %d, %v", v, err)
	}
}

// A Join on an unfinished thread does not block the VP: with one VP, a
// thread waiting for a sibling runs the sibling itself.
func TestJoinRunsOtherWork(t *testing.T) {
	rt := newLocal(t, 1)
	ctx := rt.Context()
	var order []string
	leaf := Local(func(ctx context.Context, s string) (string, error) {
		order = append(order, s)
		return s, nil
	})
	root := Go(ctx, func(ctx context.Context) (string, error) {
		a := Create(ctx, leaf, "a")
		b := Create(ctx, leaf, "b")
		c := Create(ctx, leaf, "c")
		x, _ := a.Join(ctx)
		y, _ := b.Join(ctx)
		z, _ := c.Join(ctx)
		return x + y + z, nil
	})
	v, err := root.Join(ctx)
	if err != nil || v != "abc" {
		t.Fatalf("%q %v", v, err)
	}
	if len(order) != 3 {
		t.Fatalf("ran %v", order)
	}
}

// Join returns the context's error when ctx ends first; the thread runs on.
func TestJoinContext(t *testing.T) {
	rt := newLocal(t, 2)
	release := make(chan struct{})
	h := Create(rt.Context(), Local(func(ctx context.Context, _ int) (int, error) {
		<-release
		return 1, nil
	}), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := h.Join(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("join: %v", err)
	}
	close(release)
	if v, err := h.Join(context.Background()); v != 1 || err != nil {
		t.Fatalf("second join: %d %v", v, err)
	}
}

// Close cancels what has not started, ends running bodies' contexts, and
// leaves no goroutine.
func TestCloseCancels(t *testing.T) {
	checkGoroutines(t)
	rt, err := New(context.Background(), Config{VPs: 2, Registry: NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := rt.Context()
	var started atomic.Int32
	block := Local(func(ctx context.Context, _ int) (int, error) {
		started.Add(1)
		<-ctx.Done()
		return 0, ctx.Err()
	})
	var hs []*Handle[int]
	for i := 0; i < 100; i++ {
		hs = append(hs, Create(ctx, block, i))
	}
	for started.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	rt.Close()
	rt.Close()
	closed, canceled := 0, 0
	for _, h := range hs {
		_, err := h.Join(context.Background())
		switch {
		case errors.Is(err, ErrClosed):
			closed++
		case errors.Is(err, context.Canceled):
			canceled++
		default:
			t.Fatalf("join after close: %v", err)
		}
	}
	if closed+canceled != 100 || canceled < 2 {
		t.Fatalf("%d closed, %d canceled", closed, canceled)
	}
	if _, err := Create(ctx, block, 0).Join(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("create after close: %v", err)
	}
}

func TestDeque(t *testing.T) {
	var d deque
	d.init()
	ts := make([]*task, 1000)
	for i := range ts {
		ts[i] = &task{depth: int32(i)}
		d.push(ts[i])
	}
	if d.peekDepth() != 0 {
		t.Fatal("top is not the oldest")
	}
	if x, _ := d.steal(); x != ts[0] {
		t.Fatal("steal did not take the oldest")
	}
	if d.pop() != ts[999] {
		t.Fatal("pop did not take the newest")
	}
	// Concurrent stealers and the owner take every task exactly once.
	var seen [1000]atomic.Int32
	done := make(chan struct{})
	for s := 0; s < 3; s++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				x, lost := d.steal()
				if x == nil && !lost {
					if d.size() == 0 {
						return
					}
					continue
				}
				if x != nil {
					seen[x.depth].Add(1)
				}
			}
		}()
	}
	for {
		x := d.pop()
		if x == nil {
			break
		}
		seen[x.depth].Add(1)
	}
	for s := 0; s < 3; s++ {
		<-done
	}
	for i := 1; i < 999; i++ {
		if seen[i].Load() != 1 {
			t.Fatalf("task %d taken %d times", i, seen[i].Load())
		}
	}
}
