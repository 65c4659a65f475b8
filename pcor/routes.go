package pcor

import (
	"errors"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/udp"
	"github.com/pcor-go/pcor/internal/engine"
	"github.com/pcor-go/pcor/routing"
)

// Datagram limits assumed for the hops of a multi-hop route after the
// first, whose MTU this process cannot measure: a whole datagram on
// loopback and on RDMA, else what a 1,500-byte Ethernet link carries.
var (
	largeDatagram = fabric.MaxDatagramSize
	eth4Datagram  = udp.PayloadForMTU(udp.EthernetMTU, false)
	eth6Datagram  = udp.PayloadForMTU(udp.EthernetMTU, true)
)

// router keeps a node's routes to the other members current: it holds the
// membership, rebuilds the routing table on every change and applies it to
// the dispatch engine.
type router struct {
	eng    routeSink
	self   uint32
	prices *routing.Prices                   // measured link prices; nil: the members' figures
	priced map[routing.Link]routing.LinkCost // the prices the table was built with

	mu      sync.Mutex
	members map[uint32]directory.Member
	applied map[uint32][]engine.RouteSpec // routes set in the engine
	cut     map[uint32]bool               // members removed as unreachable
	table   atomic.Pointer[routing.Table]
}

// routeSink is the part of the dispatch engine the router drives.
type routeSink interface {
	SetRoutes(proc engine.ProcID, specs []engine.RouteSpec) error
	RemovePeer(proc engine.ProcID, err error)
	PeerLeft(proc engine.ProcID, err error)
}

func newRouter(eng routeSink, self uint32) *router {
	r := &router{eng: eng, self: self,
		members: map[uint32]directory.Member{},
		applied: map[uint32][]engine.RouteSpec{},
		cut:     map[uint32]bool{},
	}
	r.table.Store(routing.Build(self, nil))
	return r
}

// reset replaces the whole membership (the directory's cache) and applies
// the routes.
func (r *router) reset(members []directory.Member) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.members)
	for _, mb := range members {
		r.members[mb.Proc] = mb
	}
	return r.applyLocked()
}

// event applies one membership change. A member that left has its pending
// requests failed with ErrPeerDown (naming it), once what it sent before
// it left has been taken (engine.PeerLeft); members that only it
// connected to are then failed with ErrUnreachable.
func (r *router) event(ev directory.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Kind {
	case directory.Joined:
		r.members[ev.Member.Proc] = ev.Member
	case directory.Left:
		p := ev.Member.Proc
		delete(r.members, p)
		delete(r.applied, p)
		delete(r.cut, p)
		if p != r.self {
			r.eng.PeerLeft(engine.ProcID(p), &PeerDownError{Proc: ProcID(p), Reason: ev.Reason})
		}
	}
	return r.applyLocked()
}

// applyLocked rebuilds the table and hands the engine what changed: new or
// changed routes, and the members no path reaches any more. r.mu is held.
func (r *router) applyLocked() error {
	ms := make([]directory.Member, 0, len(r.members))
	for _, mb := range r.members {
		ms = append(ms, mb)
	}
	model := routing.DefaultModel()
	// Datagrams this process forwards as a gateway follow the routes
	// every member computes alike, from the ports' own figures: each
	// process prices only its own links, and two that each found their
	// direct link to a third dear would otherwise forward to it through
	// each other, in a loop.
	var agreed map[uint32][]engine.RouteSpec
	if r.prices != nil {
		r.priced = r.prices.Links()
		model.Links = r.priced
		if len(r.priced) > 0 {
			plain := routing.DefaultModel()
			agreed = forwardSpecs(r.members, plain.Build(r.self, ms).Routes())
		}
	}
	t := model.Build(r.self, ms)
	// The table is published after the engine has the new routes, so that
	// whoever finds a route in it can send on it, and before members are
	// removed as unreachable, so that whoever sees a request fail finds
	// the reason in it.
	var errs []error
	eachDst(t.Routes(), func(dst uint32, routes []routing.Route) {
		specs := routeSpecs(r.members, routes)
		if fs := agreed[dst]; fs != nil && !sameRoutes(specs, fs) {
			specs = append(specs, fs...)
		}
		if slices.Equal(specs, r.applied[dst]) {
			return
		}
		if err := r.eng.SetRoutes(engine.ProcID(dst), specs); err != nil {
			errs = append(errs, err)
		} else {
			r.applied[dst] = specs
			delete(r.cut, dst)
		}
	})
	r.table.Store(t)
	for _, dst := range t.Unreachable() {
		if r.cut[dst] {
			continue
		}
		delete(r.applied, dst)
		r.cut[dst] = true
		r.eng.RemovePeer(engine.ProcID(dst), &UnreachableError{Proc: ProcID(dst), Reason: "no path", Err: ErrNoPath})
	}
	return errors.Join(errs...)
}

// reprice refits the measured prices and, when a link's price moved (or
// a link was pinned or unpinned), rebuilds the routes with them. It
// returns the links the fits repriced.
func (r *router) reprice() ([]routing.Link, error) {
	if r.prices == nil {
		return nil, nil
	}
	changed := r.prices.Refit()
	r.mu.Lock()
	defer r.mu.Unlock()
	if maps.Equal(r.prices.Links(), r.priced) {
		return changed, nil
	}
	return changed, r.applyLocked()
}

// routeSpecs turns the routes to one destination into the engine's form.
func routeSpecs(members map[uint32]directory.Member, rs []routing.Route) []engine.RouteSpec {
	specs := make([]engine.RouteSpec, len(rs))
	for i, rt := range rs {
		specs[i] = engine.RouteSpec{Port: rt.Port, Endpoint: rt.Addr, MinSize: rt.MinSize,
			MaxDatagram: pathDatagram(members, rt), Gateway: rt.Hops > 1}
	}
	return specs
}

// forwardSpecs returns the routes of rs by destination, marked as the
// routes of forwarded datagrams.
func forwardSpecs(members map[uint32]directory.Member, rs []routing.Route) map[uint32][]engine.RouteSpec {
	out := map[uint32][]engine.RouteSpec{}
	eachDst(rs, func(dst uint32, routes []routing.Route) {
		specs := routeSpecs(members, routes)
		for k := range specs {
			specs[k].Forward = true
		}
		out[dst] = specs
	})
	return out
}

// eachDst calls f with each destination's run of routes in rs (a table's
// Routes, grouped by destination).
func eachDst(rs []routing.Route, f func(dst uint32, routes []routing.Route)) {
	for i := 0; i < len(rs); {
		j := i + 1
		for j < len(rs) && rs[j].Dst == rs[i].Dst {
			j++
		}
		f(rs[i].Dst, rs[i:j])
		i = j
	}
}

// sameRoutes reports whether the routes of a and b, Forward aside, are
// the same.
func sameRoutes(a, b []engine.RouteSpec) bool {
	return slices.EqualFunc(a, b, func(x, y engine.RouteSpec) bool {
		x.Forward, y.Forward = false, false
		return x == y
	})
}

// pathDatagram is the datagram limit of the hops of rt after the first (0:
// a direct route, limited by the local port alone). A gateway forwards
// each datagram as it is and drops what its next hop cannot carry, so
// fragments must fit the narrowest hop. Hops on loopback UDP or on RDMA
// carry a whole 64 KiB datagram; any other hop is assumed to be Ethernet
// with a 1,500-byte MTU, since its MTU is known only to the gateway.
func pathDatagram(members map[uint32]directory.Member, rt routing.Route) int {
	if rt.Hops <= 1 {
		return 0
	}
	limit := largeDatagram
	for i := 1; i+1 < len(rt.Path); i++ {
		limit = min(limit, hopDatagram(members[rt.Path[i]], members[rt.Path[i+1]]))
	}
	return limit
}

// hopDatagram is the smallest datagram limit over the networks u and v
// share (the gateway may use any of them).
func hopDatagram(u, v directory.Member) int {
	limit := largeDatagram
	shared := false
	for _, pu := range u.Ports {
		for _, pv := range v.Ports {
			if pu.Fabric != pv.Fabric || pu.Network != pv.Network {
				continue
			}
			shared = true
			limit = min(limit, linkDatagram(pu, pv))
		}
	}
	if !shared {
		return eth4Datagram
	}
	return limit
}

func linkDatagram(a, b directory.PortInfo) int {
	switch a.Fabric {
	case "rdma":
		return largeDatagram
	case "udp":
		pa, errA := netip.ParseAddrPort(a.Addr)
		pb, errB := netip.ParseAddrPort(b.Addr)
		if errA != nil || errB != nil {
			return eth4Datagram
		}
		if pa.Addr().IsLoopback() && pb.Addr().IsLoopback() {
			return largeDatagram
		}
		if pa.Addr().Is6() && !pa.Addr().Is4In6() {
			return eth6Datagram
		}
	}
	return eth4Datagram
}
