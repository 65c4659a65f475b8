package hws

import (
	"slices"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/routing"
)

// RefSize is the message size, in bytes, at which Discover compares links:
// the order of a migrated task's arguments.
const RefSize = 64 << 10

// Discover makes the groups of the members from the network. For each
// member, its routing table (model.Build) gives the direct routes to the
// others; the network (fabric and network name) of its cheapest direct
// route, at RefSize bytes, is its home network, ties going to the lower
// (fabric, network) name. Members with the same home network form a group:
// they reach each other directly over their fastest link. A member reached
// from another only through a gateway, or only over a link slower than the
// one its home network offers, is in another group. A member that reaches
// no one directly is a group of its own. Every process that sees the same
// membership computes the same groups.
func Discover(members []directory.Member, model routing.Model) *Groups {
	members = uniqueMembers(members)
	type home struct {
		fabric, network string
		cost            time.Duration
	}
	byNet := map[[2]string][]uint32{}
	var alone [][]uint32
	for _, m := range members {
		t := model.Build(m.Proc, members)
		var best home
		found := false
		for _, dst := range t.Destinations() {
			r, ok := t.Lookup(dst, RefSize)
			if !ok || !r.Direct() {
				continue
			}
			c := r.Cost(RefSize)
			if !found || c < best.cost || c == best.cost &&
				(r.Fabric < best.fabric || r.Fabric == best.fabric && r.Network < best.network) {
				best, found = home{r.Fabric, r.Network, c}, true
			}
		}
		if !found {
			alone = append(alone, []uint32{m.Proc})
			continue
		}
		k := [2]string{best.fabric, best.network}
		byNet[k] = append(byNet[k], m.Proc)
	}
	lists := alone
	for _, l := range byNet {
		lists = append(lists, l)
	}
	g, _ := NewGroups(lists) // every member once: no error
	return g
}

// uniqueMembers returns the members by increasing process id, the first of
// any repeated id kept.
func uniqueMembers(members []directory.Member) []directory.Member {
	seen := make(map[uint32]bool, len(members))
	out := make([]directory.Member, 0, len(members))
	for _, m := range members {
		if !seen[m.Proc] {
			seen[m.Proc] = true
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b directory.Member) int { return int(int64(a.Proc) - int64(b.Proc)) })
	return out
}
