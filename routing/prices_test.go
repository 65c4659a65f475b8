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
	for l, want := range map[Link]LinkCost{slow: {Latency: 80 * time.Microsecond, Bandwidth: 2.5e6}, fast: {Latency: 40 * time.Microsecond, Bandwidth: 400e6}} {
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

// A link shaped by a token bucket is two lines: small messages at the
// wire's speed plus a little, large ones at the shaper's rate less a
// bucket's worth (here 55 µs + 0.45 µs/B, and −4.1 ms + 0.887 µs/B from
// about 9.5 KB on). One line through the probe sizes misses both; the
// price is the two regimes, each within 10%, the large one starting
// between the probe sizes where the lines cross. A link that one line
// describes keeps one.
func TestPricesRegimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	shaped := func(m float64) float64 { return max(55e-6+0.45e-6*m, -4.1e-3+0.887e-6*m) }
	var p Prices
	z := Link{Peer: 2, Fabric: "udp", Network: "z"}
	x := Link{Peer: 1, Fabric: "udp", Network: "x"}
	for _, m := range ProbeSizes {
		for i := range 15 {
			f := 1 + 0.02*rng.NormFloat64()
			if i == 7 {
				f = 20 // descheduled
			}
			p.Observe(z, m, time.Duration(shaped(float64(m))*f*1e9))
			p.Observe(x, m, time.Duration((14e-6+float64(m)/400e6)*f*1e9))
		}
	}
	p.Refit()
	c := p.Links()[z]
	if got := c.Latency.Seconds(); math.Abs(got-55e-6) > 0.1*55e-6 {
		t.Errorf("small messages' latency %v, want 55µs within 10%%", c.Latency)
	}
	if bw := 1 / 0.887e-6; math.Abs(c.Large.Bandwidth-bw) > 0.1*bw {
		t.Errorf("large messages' bandwidth %.3g B/s, want %.3g within 10%%", c.Large.Bandwidth, bw)
	}
	if c.Large.From <= 4<<10 || c.Large.From >= 16<<10 {
		t.Errorf("large regime from %d bytes, want between the probe sizes 4 and 16 KiB", c.Large.From)
	}
	for _, m := range []int64{16, 4 << 10, 64 << 10, 1 << 20} {
		if got, want := c.Time(m)/1e9, shaped(float64(m)); math.Abs(got-want) > 0.1*want {
			t.Errorf("%d bytes priced %.4g s, want %.4g within 10%%", m, got, want)
		}
	}
	if cx := p.Links()[x]; cx.Large != (Regime{}) || math.Abs(cx.Latency.Seconds()-14e-6) > 1.4e-6 {
		t.Errorf("a link one line describes priced %+v", cx)
	}
}
