package routing

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// observe feeds p samples of a link costing lat + m/bw, with 2% noise and
// an occasional descheduled sample.
func observe(p *Prices, rng *rand.Rand, l Link, lat time.Duration, bw float64) {
	for _, m := range []int{0, 1024, 16 << 10, 64 << 10} {
		for i := range 15 {
			t := (lat.Seconds() + float64(m)/bw) * (1 + 0.02*rng.NormFloat64())
			if i == 7 {
				t *= 20
			}
			p.Observe(l, m, time.Duration(t*1e9))
		}
	}
}

func TestPricesFitDriftPin(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var p Prices
	slow := Link{Peer: 3, Fabric: "udp", Network: "z"}
	fast := Link{Peer: 2, Fabric: "udp", Network: "x"}
	observe(&p, rng, slow, 80*time.Microsecond, 2.5e6)
	observe(&p, rng, fast, 40*time.Microsecond, 400e6)
	p.Observe(Link{Peer: 9}, 100, time.Millisecond) // one size: no fit
	if got := p.Refit(); len(got) != 2 {
		t.Fatalf("repriced %v, want both measured links", got)
	}
	links := p.Links()
	for l, want := range map[Link]LinkCost{slow: {80 * time.Microsecond, 2.5e6}, fast: {40 * time.Microsecond, 400e6}} {
		got := links[l]
		if math.Abs(float64(got.Latency-want.Latency)) > 0.1*float64(want.Latency) || math.Abs(got.Bandwidth-want.Bandwidth) > 0.1*want.Bandwidth {
			t.Errorf("%v priced %+v, want about %+v", l, got, want)
		}
	}
	// Small changes do not reprice; a link that slows down does.
	observe(&p, rng, fast, 42*time.Microsecond, 390e6)
	if got := p.Refit(); len(got) != 0 {
		t.Fatalf("repriced %v on noise", got)
	}
	for range 10 { // the window fills with the new behaviour
		observe(&p, rng, fast, 40*time.Microsecond, 40e6)
	}
	if got := p.Refit(); !slices.Equal(got, []Link{fast}) {
		t.Fatalf("repriced %v, want the link that slowed down", got)
	}
	if bw := p.Links()[fast].Bandwidth; math.Abs(bw-40e6) > 4e6 {
		t.Fatalf("new bandwidth %v, want about 40e6", bw)
	}
	// Configuration wins over measurement.
	pin := LinkCost{Latency: time.Millisecond, Bandwidth: 1e9}
	p.Pin(slow, pin)
	if p.Links()[slow] != pin {
		t.Fatalf("pinned link priced %+v", p.Links()[slow])
	}
	p.Pin(slow, LinkCost{})
	if p.Links()[slow] == pin {
		t.Fatal("unpinned link kept the pin")
	}
	if m, ok := p.Fit(fast); !ok || m.Points != 4 {
		t.Fatalf("fit %v %v", m, ok)
	}
}

// Measured prices choose the route: the direct link measured slow loses
// to a two-hop path through a gateway on fast links.
func TestMeasuredPricesChooseRoute(t *testing.T) {
	ms := []directory.Member{
		member(1, udp("x"), udp("z")),
		member(2, udp("x"), udp("y")),
		member(3, udp("y"), udp("z")),
	}
	model := DefaultModel()
	if r := mustRoute(t, model.Build(1, ms), 3, 1<<20); r.NextHop != 3 {
		t.Fatalf("with port figures the direct link should win: %+v", r)
	}
	var p Prices
	rng := rand.New(rand.NewPCG(4, 4))
	observe(&p, rng, Link{Peer: 3, Fabric: "udp", Network: "z"}, 60*time.Microsecond, 2.5e6)
	observe(&p, rng, Link{Peer: 2, Fabric: "udp", Network: "x"}, 40*time.Microsecond, 500e6)
	p.Refit()
	model.Links = p.Links()
	tb := model.Build(1, ms)
	if r := mustRoute(t, tb, 3, 1<<20); r.NextHop != 2 || r.Hops != 2 {
		t.Fatalf("1 MiB: %+v, want through the gateway", r)
	}
	if r := mustRoute(t, tb, 3, 0); r.NextHop != 3 {
		t.Fatalf("0 bytes: %+v, want the direct link (fewer fixed costs)", r)
	}
}
