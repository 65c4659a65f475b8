package hws

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{
		"random": {Kind: Random}, "CRS": {Kind: CRS}, "hws": {Kind: HWS}, "hws:6": {Kind: HWS, DepthLimit: 6},
	} {
		p, err := Parse(in)
		if err != nil || p != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, p, err, want)
		}
	}
	for _, bad := range []string{"", "ws", "random:3", "hws:0", "hws:x", "hws:65"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestDepthLimitFor(t *testing.T) {
	for _, tc := range [][3]int{{2, 8, 3}, {2, 12, 3}, {4, 8, 3}, {64, 8, 5}, {1, 8, 0}, {2, 1, 8}} {
		if got := DepthLimitFor(tc[0], tc[1]); got != tc[2] {
			t.Errorf("DepthLimitFor(%d, %d) = %d, want %d", tc[0], tc[1], got, tc[2])
		}
	}
}

func TestDefaultDepthLimit(t *testing.T) {
	for g, want := range map[int]int{1: 0, 2: 8, 3: 9, 4: 9, 16: 11, 64: 13, 65: 14} {
		if got := DefaultDepthLimit(g); got != want {
			t.Errorf("DefaultDepthLimit(%d) = %d, want %d", g, got, want)
		}
	}
}

// The cost rule: the deepest limit whose blocks' moves cost at most a
// twentieth of the work, between 16 blocks per group and the fan-out
// rule's limit.
func TestDepthLimitForCost(t *testing.T) {
	const ms, us = time.Millisecond, time.Microsecond
	for _, tc := range []struct {
		g, fanout     int
		work, perTask time.Duration
		want          int
	}{
		{2, 2, 450 * ms, 400 * us, 5}, // 32 moves of 0.4 ms ≤ 22.5 ms < 64 of them
		{2, 2, 450 * ms, 200 * us, 6}, // half the cost: one level deeper
		{2, 2, 450 * ms, 100 * us, 7},
		{2, 2, 450 * ms, 10 * us, 8},  // never deeper than DepthLimitFor
		{2, 2, 450 * ms, 0, 8},        // no cost measured
		{2, 2, 0, 400 * us, 8},        // no work measured
		{2, 2, 450 * ms, 1e9 * us, 5}, // 16 blocks per group at least
		{64, 2, 1e6 * ms, 1e9 * us, 10},
		{2, 8, 20 * ms, 400 * us, 2},  // and a limit of 2 at least
		{64, 2, 1e6 * ms, 1 * ms, 13}, // 8192 moves of 1 ms ≤ 50 s
		{64, 2, 1e5 * ms, 1 * ms, 12}, // 4096 ≤ 5 s < 8192
		{1, 2, 450 * ms, 400 * us, 0}, // one group: no global tasks
	} {
		if got := DepthLimitForCost(tc.g, tc.fanout, tc.work, tc.perTask); got != tc.want {
			t.Errorf("DepthLimitForCost(%d, %d, %v, %v) = %d, want %d", tc.g, tc.fanout, tc.work, tc.perTask, got, tc.want)
		}
	}
}

// Every policy asked many times: the victims are never the thief, and stay
// where the policy allows.
func TestNextVictims(t *testing.T) {
	g := Uniform(4, 4) // 0-3;4-7;8-11;12-15
	r := rand.New(rand.NewPCG(1, 2))
	const n = 20000
	for _, self := range []uint32{0, 5, 15} {
		// random: uniform over the 15 others, a wide request when the
		// victim is outside the group.
		hits := map[uint32]int{}
		for range n {
			s, ok := Policy{Kind: Random}.Next(g, Thief{Proc: self}, r)
			if !ok || s.Victim == self || s.Async || s.From != Local || s.Wide == g.Same(s.Victim, self) {
				t.Fatalf("random from %d: %+v %v", self, s, ok)
			}
			hits[s.Victim]++
		}
		if len(hits) != 15 {
			t.Fatalf("random from %d reached %d victims, want 15", self, len(hits))
		}
		for v, c := range hits {
			if c < n/15*8/10 || c > n/15*12/10 {
				t.Errorf("random from %d: victim %d %d times of %d", self, v, c, n)
			}
		}
		// crs: the first request is asynchronous to another group; with
		// it outstanding, synchronous inside the group.
		for range n / 10 {
			s, ok := Policy{Kind: CRS}.Next(g, Thief{Proc: self}, r)
			if !ok || !s.Wide || !s.Async || g.Same(s.Victim, self) {
				t.Fatalf("crs wide from %d: %+v", self, s)
			}
			s, ok = Policy{Kind: CRS}.Next(g, Thief{Proc: self, WideOutstanding: true}, r)
			if !ok || s.Wide || s.Async || !g.Same(s.Victim, self) || s.Victim == self {
				t.Fatalf("crs local from %d: %+v", self, s)
			}
		}
	}
	// hws: a member only ever asks inside its group, for local tasks; a
	// master asks another master for a global task, then its group.
	p := Policy{Kind: HWS}
	for range n / 10 {
		s, ok := p.Next(g, Thief{Proc: 5}, r)
		if !ok || s.Wide || s.Async || s.From != Local || !g.Same(s.Victim, 5) || s.Victim == 5 {
			t.Fatalf("hws member: %+v", s)
		}
		s, ok = p.Next(g, Thief{Proc: 4}, r)
		if !ok || !s.Wide || !s.Async || s.From != Global || !g.IsMaster(s.Victim) || s.Victim == 4 {
			t.Fatalf("hws master wide: %+v", s)
		}
		s, ok = p.Next(g, Thief{Proc: 4, WideOutstanding: true}, r)
		if !ok || s.Wide || s.From != Local || !g.Same(s.Victim, 4) || s.Victim == 4 {
			t.Fatalf("hws master local: %+v", s)
		}
	}
	// A lone process has no one to ask once its wide request is out.
	lone, _ := NewGroups([][]uint32{{0}, {1, 2}})
	if _, ok := p.Next(lone, Thief{Proc: 0, WideOutstanding: true}, r); ok {
		t.Fatal("lone master found a local victim")
	}
	if _, ok := (Policy{Kind: Random}).Next(Uniform(1, 1), Thief{Proc: 0}, r); ok {
		t.Fatal("single process found a victim")
	}
}

func TestNextDeterministic(t *testing.T) {
	g := Uniform(8, 8)
	draw := func() []uint32 {
		r := rand.New(rand.NewPCG(7, 7))
		var v []uint32
		for i := range 100 {
			for _, k := range []Kind{Random, CRS, HWS} {
				s, _ := Policy{Kind: k}.Next(g, Thief{Proc: uint32(i % 64), WideOutstanding: i%3 == 0}, r)
				v = append(v, s.Victim)
			}
		}
		return v
	}
	a, b := draw(), draw()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d differs with the same seed", i)
		}
	}
}

func TestPlaceOrderServe(t *testing.T) {
	g := Uniform(4, 2) // default limit 9
	h := Policy{Kind: HWS, DepthLimit: 5}
	if (Policy{Kind: HWS}).Limit(g) != 9 || h.Limit(g) != 5 || (Policy{Kind: HWS, DepthLimit: 2}).Limit(g) != 2 || (Policy{}).Limit(g) != 0 {
		t.Fatal("Limit")
	}
	for d := range 8 {
		want := Local
		if d < 5 {
			want = Global
		}
		if got := h.Place(g, 2, d); got != want {
			t.Errorf("master, depth %d: %v, want %v", d, got, want)
		}
		if h.Place(g, 3, d) != Local || (Policy{Kind: Random}).Place(g, 2, d) != Local || (Policy{Kind: CRS}).Place(g, 2, d) != Local {
			t.Errorf("depth %d: a member or another policy made a global task", d)
		}
	}
	if o := h.Order(g, 2); len(o) != 2 || o[0] != Local || o[1] != Global {
		t.Errorf("master order %v", o)
	}
	if o := h.Order(g, 3); len(o) != 1 || o[0] != Local {
		t.Errorf("member order %v", o)
	}
	for _, tc := range []struct {
		p      Policy
		victim uint32
		s      Steal
		want   []Take
	}{
		{h, 2, Steal{Wide: true, From: Global}, []Take{{From: Global}}},
		{h, 3, Steal{Wide: true, From: Global}, nil}, // a member has no global stack
		{h, 3, Steal{Wide: true, From: Local}, nil},  // local tasks stay in the group
		{h, 2, Steal{Wide: true, From: Local}, nil},
		{h, 3, Steal{From: Local}, []Take{{From: Local}}},
		{h, 2, Steal{From: Local}, []Take{{From: Local}, {From: Global, Newest: true, MinDepth: 4}}}, // a master hands down
		{Policy{Kind: Random}, 3, Steal{Wide: true}, []Take{{From: Local}}},
		{Policy{Kind: CRS}, 3, Steal{Wide: true, Async: true}, []Take{{From: Local}}},
	} {
		if got := tc.p.Serve(g, tc.victim, tc.s); !slices.Equal(got, tc.want) {
			t.Errorf("%v serve %+v at %d: %v, want %v", tc.p, tc.s, tc.victim, got, tc.want)
		}
	}
}

// Under hws a task moves to another group only if its data cross faster
// than the thief's group runs it; random and crs, and tasks of unknown
// work, always move.
func TestWorthMoving(t *testing.T) {
	h := Policy{Kind: HWS}
	for _, tc := range []struct {
		p          Policy
		work, move time.Duration
		pg         int
		want       bool
	}{
		{h, 30 * time.Millisecond, 10 * time.Millisecond, 3, true},
		{h, 30 * time.Millisecond, 11 * time.Millisecond, 3, false},
		{h, 2 * time.Millisecond, time.Second, 1, false}, // a matrix block on a slow link
		{h, 0, time.Second, 3, true},                     // work unknown
		{h, time.Second, 0, 0, true},
		{Policy{Kind: Random}, time.Millisecond, time.Second, 3, true},
		{Policy{Kind: CRS}, time.Millisecond, time.Second, 3, true},
	} {
		if got := tc.p.WorthMoving(tc.work, tc.move, tc.pg); got != tc.want {
			t.Errorf("%v.WorthMoving(%v, %v, %d) = %v, want %v", tc.p, tc.work, tc.move, tc.pg, got, tc.want)
		}
	}
}
