package hws

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/routing"
)

func member(proc uint32, ports ...directory.PortInfo) directory.Member {
	return directory.Member{Proc: proc, Host: fmt.Sprintf("h%d", proc), Ports: ports}
}

func udp(network string, addr string) directory.PortInfo {
	return directory.PortInfo{Fabric: "udp", Network: network, Addr: addr}
}

func slow(network string, addr string) directory.PortInfo {
	return directory.PortInfo{Fabric: "udp", Network: network, Addr: addr, Latency: 5 * time.Millisecond, Bandwidth: 1e6}
}

// Two networks joined by a gateway process that has a port on each: the
// processes behind the gateway are another group.
func TestDiscoverGateway(t *testing.T) {
	ms := []directory.Member{
		member(0, udp("lanA", "10.0.1.1:1")),
		member(1, udp("lanA", "10.0.1.2:1")),
		member(2, udp("lanA", "10.0.1.3:1")),
		member(3, udp("lanB", "10.0.2.1:1")),
		member(4, udp("lanB", "10.0.2.2:1")),
		member(5, udp("lanB", "10.0.2.3:1")),
		member(6, udp("lanB", "10.0.2.9:1"), udp("lanA", "10.0.1.9:1")),
	}
	g := Discover(ms, routing.DefaultModel())
	if got, want := g.String(), "0-2,6;3-5"; got != want {
		t.Fatalf("groups %s, want %s", got, want)
	}
	if m := g.Masters(); !slices.Equal(m, []uint32{0, 3}) {
		t.Fatalf("masters %v, want [0 3]", m)
	}
	// The routing table agrees: 0 reaches 3 only through the gateway.
	r, ok := routing.Build(0, ms).Lookup(3, RefSize)
	if !ok || r.Direct() || r.NextHop != 6 {
		t.Fatalf("route 0->3: %+v, want through 6", r)
	}
	// Discovery does not depend on the order of the membership.
	slices.Reverse(ms)
	if got := Discover(ms, routing.DefaultModel()).String(); got != "0-2,6;3-5" {
		t.Fatalf("reversed membership: groups %s", got)
	}
}

// Processes that all reach each other directly over a slow wide-area
// network, and some over faster local networks too, are grouped by the
// local networks; a process with only the slow link is alone.
func TestDiscoverSlowLink(t *testing.T) {
	ms := []directory.Member{
		member(0, udp("lanA", "10.0.1.1:1"), slow("wan", "192.168.0.1:1")),
		member(1, udp("lanA", "10.0.1.2:1"), slow("wan", "192.168.0.2:1")),
		member(2, slow("wan", "192.168.0.3:1"), udp("lanB", "10.0.2.1:1")),
		member(3, slow("wan", "192.168.0.4:1"), udp("lanB", "10.0.2.2:1")),
		member(4, slow("wan", "192.168.0.5:1")),
		member(5, udp("lonely", "10.9.9.9:1")),
	}
	g := Discover(ms, routing.DefaultModel())
	if got, want := g.String(), "0-1;2-3;4;5"; got != want {
		t.Fatalf("groups %s, want %s", got, want)
	}
	for _, p := range []uint32{0, 2, 4, 5} {
		if !g.IsMaster(p) {
			t.Errorf("%d is not a master", p)
		}
	}
	if g.Same(1, 2) || !g.Same(2, 3) {
		t.Errorf("Same is wrong")
	}
}

func TestDiscoverFlat(t *testing.T) {
	var ms []directory.Member
	for i := range 8 {
		ms = append(ms, member(uint32(i), udp("default", fmt.Sprintf("127.0.0.1:%d", 1000+i))))
	}
	g := Discover(ms, routing.DefaultModel())
	if g.Len() != 1 || g.Procs() != 8 || g.Master(0) != 0 {
		t.Fatalf("flat network: groups %s", g)
	}
}

func TestWithoutReelects(t *testing.T) {
	g := Uniform(3, 3) // 0-2;3-5;6-8
	h := g.Without(3)
	if h.String() != "0-2;4-5;6-8" || h.Master(1) != 4 || !h.IsMaster(4) || h.IsMaster(3) {
		t.Fatalf("after 3 died: %s, masters %v", h, h.Masters())
	}
	if g.String() != "0-2;3-5;6-8" {
		t.Fatalf("Without changed its receiver: %s", g)
	}
	h = h.Without(4).Without(5)
	if h.Len() != 2 || h.String() != "0-2;6-8" {
		t.Fatalf("group emptied: %s", h)
	}
	if h.Without(42) != h {
		t.Fatal("removing a non-member made new groups")
	}
}

func TestOnly(t *testing.T) {
	g := Uniform(2, 3) // 0-2;3-5
	if g.Only([]uint32{0, 1, 2, 3, 4, 5, 9}) != g {
		t.Fatal("Only with every member made new groups")
	}
	h := g.Only([]uint32{1, 2, 5})
	if h.String() != "1-2;5" || !slices.Equal(h.Masters(), []uint32{1, 5}) {
		t.Fatalf("only 1, 2, 5: %s, masters %v", h, h.Masters())
	}
}

func TestParseGroups(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"0-3;4-7", "0-3;4-7"},
		{" 0, 2 ; 1,3 ", "0,2;1,3"},
		{"5;0-1,3", "0-1,3;5"},
	} {
		l, err := ParseGroups(tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		g, err := NewGroups(l)
		if err != nil || g.String() != tc.want {
			t.Fatalf("%q: %v %v, want %s", tc.in, g, err, tc.want)
		}
	}
	for _, bad := range []string{"", "0;;1", "0-", "a", "3-1", "0,0", "0;0", "0-4294967295", "-1"} {
		if _, err := ParseGroups(bad); !errors.Is(err, ErrGroups) {
			t.Errorf("%q: err %v, want ErrGroups", bad, err)
		}
	}
}

func TestExplicit(t *testing.T) {
	var ms []directory.Member
	for _, p := range []uint32{0, 1, 2, 4, 5, 9} {
		ms = append(ms, member(p, udp("default", "127.0.0.1:1")))
	}
	g, err := Explicit(ms, [][]uint32{{1, 2, 3}, {0, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if g.String() != "0,4;1-2;5;9" {
		t.Fatalf("groups %s", g)
	}
	t.Setenv(EnvGroups, "0-1;2-3")
	l, err := GroupsFromEnv()
	if err != nil || len(l) != 2 {
		t.Fatalf("env: %v %v", l, err)
	}
}
