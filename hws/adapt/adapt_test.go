package adapt

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/hws"
	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/routing"
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

// With Weigh, an hws master keeps a global thread whose data take longer
// to cross the slow link than its work takes the other group, and hands
// over one whose work outweighs its data, and one without a cost hint;
// inside the group, and under random, nothing is weighed.
func TestWeigh(t *testing.T) {
	lan := func(g int) directory.PortInfo {
		return directory.PortInfo{Fabric: "udp", Network: fmt.Sprintf("lan%d", g), Addr: "x"}
	}
	wan := directory.PortInfo{Fabric: "udp", Network: "wan", Addr: "y", Latency: 20 * time.Millisecond, Bandwidth: 500e3}
	var ms []directory.Member
	for p := range uint32(6) {
		ms = append(ms, directory.Member{Proc: p, Ports: []directory.PortInfo{lan(int(p / 3)), wan}})
	}
	table := routing.Build(0, ms)
	g := hws.Uniform(2, 3) // 0-2;3-5
	const rate = 1e9       // cost units per second: a unit is a nanosecond
	// 256 KB in and as much back at 500 kB/s: about 1 s of the link, against
	// 3 s of work on three processes.
	block := athread.TaskInfo{Depth: 2, Class: athread.ClassGlobal, Size: 256 << 10}
	for _, tc := range []struct {
		pol   hws.Kind
		thief pcor.ProcID
		cost  int64
		want  bool
	}{
		{hws.HWS, 3, 2e6, false},   // 2 ms of work
		{hws.HWS, 3, 2.9e9, false}, // 2.9 s: just under
		{hws.HWS, 3, 3.5e9, true},  // 3.5 s: over
		{hws.HWS, 3, 0, true},      // work unknown
		{hws.Random, 3, 2e6, true}, // random does not weigh
		{hws.Random, 4, 2e6, true},
	} {
		a := New(hws.Policy{Kind: tc.pol}, 0, g, 0)
		a.Weigh(rate, func() *routing.Table { return table })
		info := block
		info.Cost = tc.cost
		if got := a.Allow(tc.thief, info); got != tc.want {
			t.Errorf("%v: allow cost %d to %d: %v, want %v", tc.pol, tc.cost, tc.thief, got, tc.want)
		}
		if kept := a.Counters().WideKept; kept != map[bool]uint64{true: 0, false: 1}[tc.want] {
			t.Errorf("%v: cost %d: kept %d", tc.pol, tc.cost, kept)
		}
	}
	a := New(hws.Policy{Kind: hws.HWS}, 0, g, 0)
	a.Weigh(rate, func() *routing.Table { return table })
	if !a.Allow(1, athread.TaskInfo{Depth: 7, Class: athread.ClassGlobal, Size: 256 << 10, Cost: 1}) {
		t.Fatal("a thread handed down inside the group was weighed")
	}
	a.Weigh(0, nil) // off
	if info := block; func() bool { info.Cost = 2e6; return !a.Allow(3, info) }() {
		t.Fatal("weighing turned off still kept a thread")
	}
}
