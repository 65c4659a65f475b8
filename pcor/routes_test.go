package pcor

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/internal/engine"
	"github.com/pcor-go/pcor/routing"
)

// sinkLog records what a router asks of the engine.
type sinkLog struct {
	calls []string
	set   map[engine.ProcID][]engine.RouteSpec
	errs  map[engine.ProcID]error
	seen  func(call string) // called before each SetRoutes and RemovePeer is logged, if set
}

func newSinkLog() *sinkLog {
	return &sinkLog{set: map[engine.ProcID][]engine.RouteSpec{}, errs: map[engine.ProcID]error{}}
}

func (s *sinkLog) SetRoutes(p engine.ProcID, specs []engine.RouteSpec) error {
	if s.seen != nil {
		s.seen(fmt.Sprintf("set %d", p))
	}
	s.calls = append(s.calls, fmt.Sprintf("set %d", p))
	s.set[p] = specs
	return nil
}

func (s *sinkLog) RemovePeer(p engine.ProcID, err error) {
	if s.seen != nil {
		s.seen(fmt.Sprintf("remove %d", p))
	}
	s.calls = append(s.calls, fmt.Sprintf("remove %d", p))
	s.errs[p] = err
}

// PeerLeft is logged as a removal: the engine removes the peer, once
// what it sent before it left has been taken.
func (s *sinkLog) PeerLeft(p engine.ProcID, err error) {
	s.calls = append(s.calls, fmt.Sprintf("remove %d", p))
	s.errs[p] = err
}

func (s *sinkLog) take() []string {
	c := s.calls
	s.calls = nil
	return c
}

func udpPort(network, addr string) directory.PortInfo {
	return directory.PortInfo{Fabric: "udp", Network: network, Addr: addr}
}

// Process 0 is on network a, 1 on a and b (the gateway), 2 on b only.
func gatewayMembers(ipA0, ipA1, ipB1, ipB2 string) []directory.Member {
	return []directory.Member{
		{Proc: 0, Ports: []directory.PortInfo{udpPort("a", ipA0)}},
		{Proc: 1, Ports: []directory.PortInfo{udpPort("a", ipA1), udpPort("b", ipB1)}},
		{Proc: 2, Ports: []directory.PortInfo{udpPort("b", ipB2)}},
	}
}

func TestRouterGatewayRoutes(t *testing.T) {
	s := newSinkLog()
	r := newRouter(s, 0)
	if err := r.reset(gatewayMembers("10.0.0.1:1", "10.0.0.2:1", "10.1.0.2:1", "10.1.0.3:1")); err != nil {
		t.Fatal(err)
	}
	if got := s.take(); !slices.Equal(got, []string{"set 1", "set 2"}) {
		t.Fatalf("calls %v", got)
	}
	if sp := s.set[1]; len(sp) != 1 || sp[0].Endpoint != "10.0.0.2:1" || sp[0].Port != 0 || sp[0].MaxDatagram != 0 {
		t.Fatalf("route to 1: %+v", sp)
	}
	// 2 is reached through 1's address on a; the second hop is Ethernet.
	if sp := s.set[2]; len(sp) != 1 || sp[0].Endpoint != "10.0.0.2:1" || sp[0].MaxDatagram != eth4Datagram {
		t.Fatalf("route to 2: %+v", sp)
	}
	tb := r.table.Load()
	if rt, ok := tb.Lookup(2, 100); !ok || rt.NextHop != 1 || rt.Hops != 2 {
		t.Fatalf("table route to 2: %+v %v", rt, ok)
	}

	// An unrelated join leaves the routes already set alone.
	if err := r.event(directory.Event{Kind: directory.Joined, Member: directory.Member{Proc: 3,
		Ports: []directory.PortInfo{udpPort("a", "10.0.0.4:1")}}}); err != nil {
		t.Fatal(err)
	}
	if got := s.take(); !slices.Equal(got, []string{"set 3"}) {
		t.Fatalf("calls after 3 joined: %v", got)
	}

	// The gateway leaves: it is down, 2 has no path.
	r.event(directory.Event{Kind: directory.Left, Member: directory.Member{Proc: 1}, Reason: "killed"})
	if got := s.take(); !slices.Equal(got, []string{"remove 1", "remove 2"}) {
		t.Fatalf("calls after the gateway left: %v", got)
	}
	if err := s.errs[1]; !errors.Is(err, ErrPeerDown) {
		t.Fatalf("gateway removed with %v", err)
	}
	var ue *UnreachableError
	if err := s.errs[2]; !errors.Is(err, ErrUnreachable) || !errors.As(err, &ue) || ue.Proc != 2 || !errors.Is(err, ErrNoPath) {
		t.Fatalf("cut-off member removed with %v", err)
	}
	if u := r.table.Load().Unreachable(); !slices.Equal(u, []uint32{2}) {
		t.Fatalf("unreachable %v", u)
	}
	// Another change does not remove 2 again.
	r.event(directory.Event{Kind: directory.Left, Member: directory.Member{Proc: 3}})
	if got := s.take(); !slices.Equal(got, []string{"remove 3"}) {
		t.Fatalf("calls after 3 left: %v", got)
	}

	// The gateway comes back: 2 is routed again.
	r.event(directory.Event{Kind: directory.Joined, Member: gatewayMembers("", "10.0.0.2:2", "10.1.0.2:2", "")[1]})
	if got := s.take(); !slices.Equal(got, []string{"set 1", "set 2"}) {
		t.Fatalf("calls after the gateway rejoined: %v", got)
	}
	if sp := s.set[2]; sp[0].Endpoint != "10.0.0.2:2" {
		t.Fatalf("route to 2 after rejoin: %+v", sp)
	}
}

func TestRouterLoopbackGateway(t *testing.T) {
	s := newSinkLog()
	r := newRouter(s, 0)
	r.reset(gatewayMembers("127.0.0.1:1", "127.0.0.1:2", "127.0.0.2:3", "127.0.0.3:4"))
	if sp := s.set[2]; len(sp) != 1 || sp[0].MaxDatagram != largeDatagram {
		t.Fatalf("route to 2 over loopback: %+v", sp)
	}
	r.reset(gatewayMembers("[fd00::1]:1", "[fd00::2]:1", "[fd01::2]:1", "[fd01::3]:1"))
	if sp := s.set[2]; sp[0].MaxDatagram != eth6Datagram {
		t.Fatalf("route to 2 over IPv6: %+v", sp)
	}
}

// A member on a network nobody else is on is unreachable from the start:
// receives naming it fail at once instead of waiting for ever.
func TestRouterIsolatedMember(t *testing.T) {
	s := newSinkLog()
	r := newRouter(s, 0)
	ms := gatewayMembers("10.0.0.1:1", "10.0.0.2:1", "10.1.0.2:1", "10.1.0.3:1")
	ms = append(ms, directory.Member{Proc: 7, Ports: []directory.PortInfo{udpPort("z", "10.9.0.1:1")}})
	r.reset(ms)
	if got := s.take(); !slices.Equal(got, []string{"set 1", "set 2", "remove 7"}) {
		t.Fatalf("calls %v", got)
	}
	if !errors.Is(s.errs[7], ErrUnreachable) {
		t.Fatal(s.errs[7])
	}
}

// Two networks between the same pair: the specs carry both routes, split
// at the crossover of the model, the low-latency network first.
func TestRouterTwoNetworksBySize(t *testing.T) {
	s := newSinkLog()
	r := newRouter(s, 0)
	lowLat := func(addr string) directory.PortInfo {
		p := udpPort("eth", addr)
		p.Latency, p.Bandwidth = 20e3, 100e6
		return p
	}
	bulk := func(addr string) directory.PortInfo {
		p := udpPort("ib", addr)
		p.Latency, p.Bandwidth = 100e3, 10e9
		return p
	}
	r.reset([]directory.Member{
		{Proc: 0, Ports: []directory.PortInfo{bulk("10.2.0.1:1"), lowLat("10.1.0.1:1")}},
		{Proc: 1, Ports: []directory.PortInfo{lowLat("10.1.0.2:1"), bulk("10.2.0.2:1")}},
	})
	sp := s.set[1]
	if len(sp) != 2 || sp[0].Port != 1 || sp[0].Endpoint != "10.1.0.2:1" || sp[0].MinSize != 0 ||
		sp[1].Port != 0 || sp[1].Endpoint != "10.2.0.2:1" || sp[1].MinSize != 8081 {
		t.Fatalf("specs %+v", sp)
	}
}

func TestParseListenCosts(t *testing.T) {
	ls, cs, err := ParseListenCosts("10.0.0.1:0@lan;latency=20us;bandwidth=1.25e7, rdma/mlx5_0:1@ib,127.0.0.1:5;bandwidth=1e9")
	if err != nil || len(ls) != 3 || len(cs) != 3 {
		t.Fatalf("%+v %+v %v", ls, cs, err)
	}
	if ls[0].Addr != "10.0.0.1:0" || ls[0].Network != "lan" || cs[0].Latency != 20*time.Microsecond || cs[0].Bandwidth != 1.25e7 {
		t.Fatalf("first entry %+v %+v", ls[0], cs[0])
	}
	if ls[1].Fabric != "rdma" || cs[1] != (routing.LinkCost{}) || ls[2].Addr != "127.0.0.1:5" || cs[2].Bandwidth != 1e9 {
		t.Fatalf("entries %+v %+v", ls, cs)
	}
	for _, bad := range []string{"1.2.3.4:0;latency=-1s", "1.2.3.4:0;bandwidth=x", "1.2.3.4:0;bandwidth=+Inf", "1.2.3.4:0;colour=red", ";latency=1s"} {
		if _, _, err := ParseListenCosts(bad); !errors.Is(err, directory.ErrEnv) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// The table and the engine agree for whoever reads the table: a route
// shows in it only once the engine has it, so a send the table allows
// finds its route; and a member shows as unreachable before the engine
// fails its requests, so a failed request finds its reason there.
func TestRouterPublishOrder(t *testing.T) {
	s := newSinkLog()
	r := newRouter(s, 0)
	var bad []string
	s.seen = func(call string) {
		var p uint32
		var kind string
		fmt.Sscanf(call, "%s %d", &kind, &p)
		_, routed := r.table.Load().Lookup(p, 0)
		switch {
		case kind == "set" && routed && s.set[engine.ProcID(p)] == nil:
			bad = append(bad, fmt.Sprintf("table routes to %d before the engine has a route", p))
		case kind == "remove" && routed:
			bad = append(bad, fmt.Sprintf("engine fails %d's requests while the table still routes to it", p))
		}
	}
	if err := r.reset(gatewayMembers("10.0.0.1:1", "10.0.0.2:1", "10.1.0.2:1", "10.1.0.3:1")); err != nil {
		t.Fatal(err)
	}
	r.event(directory.Event{Kind: directory.Left, Member: directory.Member{Proc: 1}, Reason: "killed"})
	r.event(directory.Event{Kind: directory.Joined, Member: gatewayMembers("", "10.0.0.2:2", "10.1.0.2:2", "")[1]})
	if got := s.take(); !slices.Equal(got, []string{"set 1", "set 2", "remove 1", "remove 2", "set 1", "set 2"}) {
		t.Fatalf("calls %v", got)
	}
	for _, b := range bad {
		t.Error(b)
	}
}
