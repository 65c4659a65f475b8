package adapt

import (
	"slices"
	"testing"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/hws"
	"github.com/pcor-go/pcor/pcor"
)

func procs(n int) []pcor.ProcID {
	p := make([]pcor.ProcID, n)
	for i := range p {
		p[i] = pcor.ProcID(i)
	}
	return p
}

func TestHWSDecisions(t *testing.T) {
	g := hws.Uniform(2, 4) // 0-3;4-7, default limit 8
	pol := hws.Policy{Kind: hws.HWS}
	master, member := New(pol, 0, g, 0), New(pol, 1, g, 0)
	for _, tc := range []struct {
		a     *Policy
		depth int
		want  athread.Class
	}{
		{master, 0, athread.ClassLocal}, {master, 1, athread.ClassLocal}, // the program's first threads stay
		{master, 2, athread.ClassGlobal}, {master, 7, athread.ClassGlobal}, {master, 8, ClassGroup},
		{master, 12, ClassGroup}, {master, 13, athread.ClassLocal},
		{member, 3, ClassGroup}, {member, 9, ClassGroup}, {member, 20, athread.ClassLocal},
	} {
		if got := tc.a.Classify(athread.TaskInfo{Depth: tc.depth}); got != tc.want {
			t.Errorf("proc %d depth %d: class %d, want %d", tc.a.self, tc.depth, got, tc.want)
		}
	}
	for _, tc := range []struct {
		thief pcor.ProcID
		info  athread.TaskInfo
		want  bool
	}{
		{4, athread.TaskInfo{Depth: 2, Class: athread.ClassGlobal}, true},  // another master
		{5, athread.TaskInfo{Depth: 2, Class: athread.ClassGlobal}, false}, // a member elsewhere
		{1, athread.TaskInfo{Depth: 2, Class: athread.ClassGlobal}, false}, // too big to hand down
		{1, athread.TaskInfo{Depth: 7, Class: athread.ClassGlobal}, true},  // handed down
		{1, athread.TaskInfo{Depth: 9, Class: ClassGroup}, true},
		{4, athread.TaskInfo{Depth: 9, Class: ClassGroup}, false},
	} {
		if got := master.Allow(tc.thief, tc.info); got != tc.want {
			t.Errorf("allow %+v to %d: %v", tc.info, tc.thief, got)
		}
	}
	flat := New(pol, 2, hws.Uniform(1, 4), 0) // no depth limit: offered as deep as random's
	if flat.Classify(athread.TaskInfo{Depth: 8}) != ClassGroup || flat.Classify(athread.TaskInfo{Depth: 9}) != athread.ClassLocal {
		t.Fatal("flat hws classes")
	}
	c := master.Counters()
	if c.WideSteals != 1 || c.LocalSteals != 2 || !slices.Equal(c.WideDepths, []int{2}) {
		t.Fatalf("counted %+v", c)
	}
	// A member asks only its group; a master asks its group three times,
	// then another master.
	for range 1000 {
		v, ok := member.Victim(athread.StealQuery{Self: 1, Thief: 1, Procs: procs(8)})
		if !ok || v == 1 || v > 3 {
			t.Fatalf("member asked %d", v)
		}
	}
	var seq []pcor.ProcID
	for range 8 {
		v, ok := master.Victim(athread.StealQuery{Self: 0, Thief: 0, Procs: procs(8)})
		if !ok {
			t.Fatal("master asked no one")
		}
		seq = append(seq, v)
	}
	for i, v := range seq {
		if wide := v == 4; wide != (i%4 == 3) || v == 0 || (v > 3 && v != 4) {
			t.Fatalf("master's requests %v", seq)
		}
	}
	if c := master.Counters(); c.WideAttempts != 2 || c.LocalAttempts != 6 {
		t.Fatalf("attempts %+v", c)
	}
	// The request to the other master is asynchronous; while it is
	// outstanding the master asks only inside its group.
	if !master.Async(athread.StealQuery{Self: 0}, 4) || master.Async(athread.StealQuery{Self: 0}, 1) {
		t.Fatal("hws: the request to another master is not the asynchronous one")
	}
	for range 16 {
		v, ok := master.Victim(athread.StealQuery{Self: 0, Thief: 0, Procs: procs(8), Outstanding: true})
		if !ok || v == 0 || v > 3 {
			t.Fatalf("master with a request outstanding asked %d (%v)", v, ok)
		}
	}
	lone := New(pol, 0, hws.Uniform(2, 1), 0) // groups of one: only masters
	if v, ok := lone.Victim(athread.StealQuery{Self: 0, Thief: 0, Procs: procs(2), Outstanding: true}); ok {
		t.Fatalf("a lone master with a request outstanding asked %d", v)
	}
	if v, ok := lone.Victim(athread.StealQuery{Self: 0, Thief: 0, Procs: procs(2)}); !ok || v != 1 {
		t.Fatalf("a lone master asked %d (%v)", v, ok)
	}
}

func TestRandomAndCRS(t *testing.T) {
	g := hws.Uniform(2, 2)
	r := New(hws.Policy{Kind: hws.Random}, 0, g, 4)
	if r.Classify(athread.TaskInfo{Depth: 4}) != athread.ClassGlobal || r.Classify(athread.TaskInfo{Depth: 5}) != athread.ClassLocal {
		t.Fatal("random classes")
	}
	if !r.Allow(3, athread.TaskInfo{Depth: 0, Class: athread.ClassGlobal}) {
		t.Fatal("random refused")
	}
	wide := 0
	for range 3000 {
		v, _ := r.Victim(athread.StealQuery{Self: 0, Procs: procs(4)})
		if v >= 2 {
			wide++
		}
	}
	if wide < 1700 || wide > 2300 { // 2 of the 3 others are in the other group
		t.Fatalf("random asked the other group %d times of 3000", wide)
	}
	// crs: with no request outstanding, an asynchronous one to the other
	// group; while it is outstanding, synchronous ones inside the group.
	c := New(hws.Policy{Kind: hws.CRS}, 3, g, 0)
	for range 100 {
		q := athread.StealQuery{Self: 3, Procs: procs(4)}
		v, ok := c.Victim(q)
		if !ok || v > 1 || !c.Async(q, v) {
			t.Fatalf("crs with nothing outstanding asked %d (%v), async %v", v, ok, c.Async(q, v))
		}
		q.Outstanding = true
		v, ok = c.Victim(q)
		if !ok || v != 2 || c.Async(q, v) {
			t.Fatalf("crs with a request outstanding asked %d (%v), async %v", v, ok, c.Async(q, v))
		}
	}
	if r.Async(athread.StealQuery{Self: 0}, 3) {
		t.Fatal("a random request to another group is asynchronous")
	}
	if cc := c.Counters(); cc.WideAttempts != 100 || cc.LocalAttempts != 100 {
		t.Fatalf("crs counted %+v", cc)
	}
}

// When the master of a group is gone from athread's live processes, the
// next process of the group is master: it asks other masters, and they
// ask it.
func TestMasterFailover(t *testing.T) {
	g := hws.Uniform(2, 3) // 0-2;3-5
	live := []pcor.ProcID{1, 2, 3, 4, 5}
	m1 := New(hws.Policy{Kind: hws.HWS}, 1, g, 0)
	wide := 0
	for range 30 {
		v, ok := m1.Victim(athread.StealQuery{Self: 1, Procs: live})
		if !ok || v == 0 || v == 1 {
			t.Fatalf("process 1 asked %d", v)
		}
		if v == 3 {
			wide++
		}
	}
	if wide != 15 || !m1.Groups().IsMaster(1) {
		t.Fatalf("process 1 asked the other master %d times of 30 (groups %s)", wide, m1.Groups())
	}
	m3 := New(hws.Policy{Kind: hws.HWS}, 3, g, 0)
	for range 30 {
		if v, _ := m3.Victim(athread.StealQuery{Self: 3, Procs: live}); v == 0 {
			t.Fatal("a master asked the dead one")
		}
	}
	if !m3.Allow(1, athread.TaskInfo{Depth: 1, Class: athread.ClassGlobal}) {
		t.Fatal("the new master may not take global threads")
	}
}
