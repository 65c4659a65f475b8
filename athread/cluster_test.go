package athread

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// pair starts two runtimes of one job in this process, each with its own
// pcor node on loopback UDP.
func pair(t *testing.T, reg *Registry, pol func() Policy) [2]*Runtime {
	t.Helper()
	checkGoroutines(t)
	var nodes [2]*pcor.Node
	for i := range nodes {
		n, err := pcor.NewNode(pcor.Config{Proc: pcor.ProcID(i), JobKey: 0xa7a7})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes[i] = n
	}
	for i, n := range nodes {
		if err := n.AddPeer(pcor.Peer{Proc: pcor.ProcID(1 - i), Addr: nodes[1-i].Endpoints()[0].Addr}); err != nil {
			t.Fatal(err)
		}
	}
	var rts [2]*Runtime
	var errs [2]error
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range rts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := Config{VPs: 1, Node: nodes[i], Procs: []pcor.ProcID{0, 1}, Registry: reg}
			if pol != nil {
				cfg.Policy = pol()
			}
			rts[i], errs[i] = New(ctx, cfg)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("runtime %d: %v", i, err)
		}
		t.Cleanup(func() { rts[i].Close() })
	}
	return rts
}

// Two runtimes in one process share a fine-grained computation through
// pcor; closing them leaves no goroutine (checked by pair).
func TestPairSharesWork(t *testing.T) {
	reg := NewRegistry()
	var fib *Func[int, int]
	fib = RegisterIn(reg, "fib", func(ctx context.Context, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		a, b := Create(ctx, fib, n-1), Create(ctx, fib, n-2)
		x, err := a.Join(ctx)
		if err != nil {
			return 0, err
		}
		y, err := b.Join(ctx)
		return x + y, err
	}, Fixed[int](), Fixed[int]())
	// A thread in process 0 waits until process 1 has run one: only
	// stealing ends the wait.
	var ranIn1 atomic.Int32
	gate := RegisterIn(reg, "gate", func(ctx context.Context, n int) (int, error) {
		if Proc(ctx) == 1 {
			ranIn1.Add(1)
			return n, nil
		}
		for deadline := time.Now().Add(30 * time.Second); ranIn1.Load() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				return 0, errors.New("process 1 never ran a thread")
			}
		}
		return n, nil
	}, Fixed[int](), Fixed[int]())
	rts := pair(t, reg, nil)
	ctx := rts[0].Context()
	sum, err := Go(ctx, func(ctx context.Context) (int, error) {
		var hs []*Handle[int]
		for i := 0; i < 8; i++ {
			hs = append(hs, Create(ctx, gate, i))
		}
		s := 0
		for _, h := range hs {
			v, err := h.Join(ctx)
			if err != nil {
				return 0, err
			}
			s += v
		}
		return s, nil
	}).Join(ctx)
	if err != nil || sum != 28 {
		t.Fatalf("gate: %d, %v", sum, err)
	}
	if v, err := Create(ctx, fib, 20).Join(ctx); err != nil || v != 6765 {
		t.Fatalf("fib(20) = %d, %v", v, err)
	}
	c0, c1 := rts[0].Counters(), rts[1].Counters()
	if c1.RemoteSteals == 0 || c1.ResultsOut == 0 || c0.Given == 0 || c0.ResultsIn != c1.ResultsOut {
		t.Fatalf("no work moved: %+v / %+v", c0, c1)
	}
	if c0.Malformed+c1.Malformed != 0 {
		t.Fatalf("malformed messages: %+v / %+v", c0, c1)
	}
}

// ownPolicy keeps every thread home except the ones at depth 1, and lets
// only process 1 steal: a policy's decisions are followed.
type ownPolicy struct {
	mu      sync.Mutex
	allowed []int
}

func (p *ownPolicy) Classify(t TaskInfo) Class {
	if t.Depth == 1 {
		return ClassGlobal + 1
	}
	return ClassLocal
}

func (p *ownPolicy) Allow(thief pcor.ProcID, t TaskInfo) bool {
	p.mu.Lock()
	p.allowed = append(p.allowed, t.Depth)
	p.mu.Unlock()
	return thief == 1 && t.Class == ClassGlobal+1 && t.Func == "sleep" && t.Size == 8
}

func (p *ownPolicy) Victim(q StealQuery) (pcor.ProcID, bool) {
	if q.Self == 1 {
		return 0, true
	}
	return 0, false
}

func (p *ownPolicy) Forward(q StealQuery) (pcor.ProcID, bool) { return 0, false }

func TestPolicyIsFollowed(t *testing.T) {
	reg := NewRegistry()
	where := RegisterIn(reg, "sleep", func(ctx context.Context, ms int) (pcor.ProcID, error) {
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return Proc(ctx), nil
	}, Fixed[int](), Fixed[pcor.ProcID]())
	pols := []*ownPolicy{{}, {}}
	i := 0
	var mu sync.Mutex
	rts := pair(t, reg, func() Policy {
		mu.Lock()
		defer mu.Unlock()
		i++
		return pols[i-1]
	})
	ctx := rts[0].Context()
	got := map[pcor.ProcID]int{}
	root := Go(ctx, func(ctx context.Context) (int, error) {
		var hs []*Handle[pcor.ProcID]
		for j := 0; j < 20; j++ {
			hs = append(hs, Create(ctx, where, 5))
		}
		for _, h := range hs {
			p, err := h.Join(ctx)
			if err != nil {
				return 0, err
			}
			got[p]++
		}
		return 0, nil
	})
	if _, err := root.Join(ctx); err != nil {
		t.Fatal(err)
	}
	if got[1] == 0 || got[0]+got[1] != 20 {
		t.Fatalf("threads ran %v", got)
	}
	if c := rts[1].Counters(); c.Given != 0 || c.StealsServed != 0 {
		t.Fatalf("process 0 stole although its policy says no: %+v", c)
	}
}

// A thread placed in a process that is not in the job fails at Join.
func TestPlaceOnUnknownProcess(t *testing.T) {
	reg := NewRegistry()
	f := RegisterIn(reg, "id", func(ctx context.Context, n int) (int, error) { return n, nil }, Fixed[int](), Fixed[int]())
	rts := pair(t, reg, nil)
	ctx := rts[0].Context()
	_, err := Create(ctx, f, 1, Attr{Place: OnProc, Proc: 7}).Join(ctx)
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Proc != 7 || !errors.Is(err, pcor.ErrPeerDown) {
		t.Fatalf("got %v", err)
	}
	if _, err := Create(ctx, Local(func(ctx context.Context, n int) (int, error) { return n, nil }), 1, Attr{Place: OnProc, Proc: 1}).Join(ctx); err == nil {
		t.Fatal("a local function was placed in another process")
	}
}

// homePolicy offers every thread and lets no process ask for work; with
// depthFirst it is a DepthFirstPolicy.
type homePolicy struct{ depthFirst bool }

func (p *homePolicy) Classify(t TaskInfo) Class                { return ClassGlobal }
func (p *homePolicy) Allow(thief pcor.ProcID, t TaskInfo) bool { return true }
func (p *homePolicy) Victim(q StealQuery) (pcor.ProcID, bool)  { return 0, false }
func (p *homePolicy) Forward(q StealQuery) (pcor.ProcID, bool) { return 0, false }
func (p *homePolicy) DepthFirst() bool                         { return p.depthFirst }

// A VP waiting for a join takes the offered threads shallowest (here:
// costliest) first, or, under a DepthFirstPolicy, newest first.
func TestDepthFirstPolicy(t *testing.T) {
	for _, depthFirst := range []bool{false, true} {
		reg := NewRegistry()
		var mu sync.Mutex
		var order []int
		mark := RegisterIn(reg, "mark", func(ctx context.Context, n int) (int, error) {
			mu.Lock()
			order = append(order, n)
			mu.Unlock()
			return n, nil
		}, Fixed[int](), Fixed[int]())
		wait := RegisterIn(reg, "wait", func(ctx context.Context, n int) (int, error) {
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
				mu.Lock()
				got := len(order)
				mu.Unlock()
				if got == n {
					return 0, nil
				}
				if time.Now().After(deadline) {
					return 0, errors.New("the offered threads did not run")
				}
			}
		}, Fixed[int](), Fixed[int]())
		rts := pair(t, reg, func() Policy { return &homePolicy{depthFirst: depthFirst} })
		ctx := rts[0].Context()
		_, err := Go(ctx, func(ctx context.Context) (int, error) {
			var hs []*Handle[int]
			for i := range 3 {
				hs = append(hs, Create(ctx, mark, i, Attr{Cost: int64(3 - i)}))
			}
			// A thread of its own goroutine that waits for the three:
			// joining it, this VP runs them from the offer pool.
			w := Create(ctx, wait, 3, Attr{Place: OnProc, Proc: 0})
			if _, err := w.Join(ctx); err != nil {
				return 0, err
			}
			for _, h := range hs {
				if _, err := h.Join(ctx); err != nil {
					return 0, err
				}
			}
			return 0, nil
		}).Join(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []int{0, 1, 2}
		if depthFirst {
			want = []int{2, 1, 0}
		}
		if !slices.Equal(order, want) {
			t.Fatalf("depth first %v: the VP ran the offered threads in the order %v, want %v", depthFirst, order, want)
		}
		for _, rt := range rts {
			rt.Close()
		}
	}
}

// A thread offered after a process went down is not handed to it, even
// when that process had asked for work just before (a hungry thief) or its
// request crossed the loss: the thread runs here and its Join returns.
func TestNoHandOutToLostProcess(t *testing.T) {
	reg := NewRegistry()
	f := RegisterIn(reg, "id", func(ctx context.Context, n int) (int, error) { return n, nil }, Fixed[int](), Fixed[int]())
	rts := pair(t, reg, func() Policy { return &homePolicy{} })
	rts[1].Close()
	c := rts[0].cl
	c.mu.Lock()
	c.hungry[1] = time.Now().Add(time.Hour) // hungry whenever the thread is offered
	c.mu.Unlock()
	c.peerDown(1, errors.New("gone for the test"))
	c.mu.Lock()
	c.hungry[1] = time.Now().Add(time.Hour) // its request crossed the loss
	// A process still live (one that asks for nothing), so that the
	// thread is offered at all.
	c.procs = append(c.procs, 2)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(rts[0].Context(), 20*time.Second)
	defer cancel()
	root := Go(ctx, func(ctx context.Context) (int, error) {
		return Create(ctx, f, 7).Join(ctx)
	})
	if n, err := root.Join(ctx); n != 7 || err != nil {
		t.Fatalf("got %d, %v", n, err)
	}
	if g := rts[0].Counters().Given; g != 0 {
		t.Fatalf("%d threads handed to a lost process", g)
	}
}

// An idle process that every other process holds as hungry (each answered
// its request with no work and will hand it the next thread it offers)
// stops asking every millisecond and waits; a thread offered then still
// reaches it unasked.
func TestHeldThiefWaits(t *testing.T) {
	reg := NewRegistry()
	ran := make(chan pcor.ProcID, 1)
	f := RegisterIn(reg, "where", func(ctx context.Context, n int) (int, error) {
		ran <- Proc(ctx)
		return n, nil
	}, Fixed[int](), Fixed[int]())
	rts := pair(t, reg, nil)
	const idle = 300 * time.Millisecond
	time.Sleep(idle)
	for i, rt := range rts {
		// Asking every millisecond (or less often, when each request
		// takes long) made hundreds; waiting while held, a few per
		// heldFor.
		if n := rt.Counters().RemoteStealsTried; n > 3*uint64(idle/heldFor)+10 {
			t.Errorf("process %d, idle %v, asked for work %d times", i, idle, n)
		}
	}
	// Process 1 waits, held by process 0: a thread process 0 offers goes
	// to it. Process 0's VP is kept busy until then.
	ctx, cancel := context.WithTimeout(rts[0].Context(), 20*time.Second)
	defer cancel()
	root := Go(ctx, func(ctx context.Context) (int, error) {
		h := Create(ctx, f, 7)
		select {
		case p := <-ran:
			if p != 1 {
				return 0, fmt.Errorf("the thread ran in process %d", p)
			}
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return h.Join(ctx)
	})
	if n, err := root.Join(ctx); n != 7 || err != nil {
		t.Fatalf("got %d, %v", n, err)
	}
}
