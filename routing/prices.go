package routing

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/pcor-go/pcor/perfmodel"
)

// Prices keeps the measured cost of the local process's links: it fits
// T(m) = a + b·m per link to one-way message times (active probes over a
// few sizes, and passive samples from real traffic), and hands Build the
// fitted figures (Model.Links), or the figures configuration pinned. A
// link that one line does not describe (its line misses some size's
// median by more than Tolerance) is priced in two regimes, a line through
// its small sizes and one through its large sizes (LinkCost.Large): a
// shaper's token bucket passes small messages at the wire's speed and the
// rest at its rate, and a line across both put the large messages' cost
// too low and the small ones' latency wrong. A
// link's price changes only when its fit drifts: then Refit reports it
// and the table should be rebuilt. The zero value is ready to use; it is
// safe for concurrent use.
type Prices struct {
	// Drift is the relative change of a link's fitted time, at 0 bytes
	// or at RefSize, that makes Refit change its price (default 0.25).
	Drift float64
	// RefSize is the message size at which a per-byte change is judged
	// (default 64 KiB).
	RefSize int
	// Window is the number of samples kept per link, newest first
	// (default 512).
	Window int
	// Tolerance is the largest relative miss, at some size's median, of
	// a link's line through every size before the link is priced in two
	// regimes (default 0.15). Two regimes need two sizes each.
	Tolerance float64

	mu     sync.Mutex
	links  map[Link]*linkPrice
	pinned map[Link]LinkCost
}

type linkPrice struct {
	samples *perfmodel.Region
	fit     *perfmodel.Model
	priced  LinkCost
	ok      bool
}

func (p *Prices) drift() float64 {
	if p.Drift > 0 {
		return p.Drift
	}
	return 0.25
}

func (p *Prices) tolerance() float64 {
	if p.Tolerance > 0 {
		return p.Tolerance
	}
	return 0.15
}

func (p *Prices) refSize() float64 {
	if p.RefSize > 0 {
		return float64(p.RefSize)
	}
	return 64 << 10
}

func (p *Prices) linkLocked(l Link) *linkPrice {
	if p.links == nil {
		p.links = map[Link]*linkPrice{}
	}
	lp := p.links[l]
	if lp == nil {
		w := p.Window
		if w <= 0 {
			w = 512
		}
		rec := &perfmodel.Recorder{MaxSamples: w}
		lp = &linkPrice{samples: rec.Region("link")}
		p.links[l] = lp
	}
	return lp
}

// Observe records that a message of size bytes took oneWay on link l (a
// round trip's half, or a passive measurement).
func (p *Prices) Observe(l Link, size int, oneWay time.Duration) {
	if size < 0 || oneWay <= 0 {
		return
	}
	p.mu.Lock()
	lp := p.linkLocked(l)
	p.mu.Unlock()
	lp.samples.Add(perfmodel.Sample{N: float64(size), T: oneWay.Seconds()})
}

// Pin fixes link l's price, whatever is measured; a zero LinkCost unpins.
func (p *Prices) Pin(l Link, c LinkCost) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c == (LinkCost{}) {
		delete(p.pinned, l)
		return
	}
	if p.pinned == nil {
		p.pinned = map[Link]LinkCost{}
	}
	p.pinned[l] = c
}

// Refit fits every link with samples of two sizes or more and reprices
// the links whose fit moved by more than Drift since they were priced, or
// that had no price. It returns the links repriced. A size's time is the
// median of its samples (anomalies dropped by perfmodel's rule), as bench
// reports a link: one-way times are skewed to the right by waits for a
// CPU, which a mean would carry into the fixed cost. Each line is fitted
// by relative residuals, every size counting alike; a link whose line
// misses by more than Tolerance gets two (regimes).
func (p *Prices) Refit() []Link {
	p.mu.Lock()
	defer p.mu.Unlock()
	var changed []Link
	for l, lp := range p.links {
		obs := perfmodel.Summarize(lp.samples.Samples(), perfmodel.Rule{})
		if len(obs) < 2 {
			continue
		}
		for i := range obs {
			obs[i].T = obs[i].Median
		}
		m, err := perfmodel.Fit(perfmodel.Linear(), obs, perfmodel.Relative)
		if err != nil {
			continue
		}
		lp.fit = m
		c := costOf(m)
		if m.MaxRelErr > p.tolerance() {
			if r, ok := regimes(obs); ok {
				c = r
			}
		}
		if lp.ok && !p.moved(lp.priced, c) {
			continue
		}
		lp.priced, lp.ok = c, true
		changed = append(changed, l)
	}
	return changed
}

// costOf turns a fit of seconds against bytes into a LinkCost; a fit
// whose slope is not positive means a bandwidth too high to tell apart
// (+Inf), whose intercept is not positive, no fixed cost measurable (1 ns).
func costOf(m *perfmodel.Model) LinkCost {
	a, b := m.Coef[0], m.Coef[1]
	c := LinkCost{Latency: max(time.Duration(a*1e9), time.Nanosecond), Bandwidth: math.Inf(1)}
	if b > 0 {
		c.Bandwidth = 1 / b
	}
	return c
}

// regimes prices a link from its sizes' medians (obs, at least four
// sizes) in two regimes: a line through the smallest sizes and one
// through the largest, at least two sizes each, split where the two lines
// together miss least (relative squared residuals). The large regime
// starts where its line crosses the small one's between the two groups
// of sizes (the cost is then continuous there), else at the smallest
// large size. It reports false when a line cannot be fitted.
func regimes(obs []perfmodel.Observation) (LinkCost, bool) {
	obs = slices.Clone(obs)
	slices.SortFunc(obs, func(a, b perfmodel.Observation) int { return cmp.Compare(a.N, b.N) })
	var small, large *perfmodel.Model
	var split int
	best := math.Inf(1)
	for k := 2; k+2 <= len(obs); k++ {
		s, err1 := perfmodel.Fit(perfmodel.Linear(), obs[:k], perfmodel.Relative)
		l, err2 := perfmodel.Fit(perfmodel.Linear(), obs[k:], perfmodel.Relative)
		if err1 != nil || err2 != nil {
			continue
		}
		if r := missed(s, obs[:k]) + missed(l, obs[k:]); r < best {
			small, large, split, best = s, l, k, r
		}
	}
	if small == nil || !(large.Coef[1] > 0) {
		return LinkCost{}, false
	}
	c := costOf(small)
	lo, hi := obs[split-1].N, obs[split].N
	from := hi
	if db := large.Coef[1] - small.Coef[1]; db > 0 {
		if m := (small.Coef[0] - large.Coef[0]) / db; m > lo && m < hi {
			from = math.Ceil(m)
		}
	}
	c.Large = Regime{From: max(int64(from), 1), Latency: time.Duration(large.Coef[0] * 1e9), Bandwidth: 1 / large.Coef[1]}
	return c, true
}

// missed is the sum of m's squared relative residuals at obs.
func missed(m *perfmodel.Model, obs []perfmodel.Observation) float64 {
	var r float64
	for _, o := range obs {
		e := (o.T - m.Predict(o.N, o.P).T) / o.T
		r += e * e
	}
	return r
}

// moved reports whether the time of a message at 0 bytes or at RefSize
// differs between old and new by more than Drift.
func (p *Prices) moved(old, new LinkCost) bool {
	for _, m := range []int64{0, int64(p.refSize())} {
		o, n := old.Time(m), new.Time(m)
		if math.Abs(n-o) > p.drift()*o {
			return true
		}
	}
	return false
}

// Fit returns link l's current fit of one-way time (seconds) against
// message size (bytes).
func (p *Prices) Fit(l Link) (*perfmodel.Model, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lp := p.links[l]
	if lp == nil || lp.fit == nil {
		return nil, false
	}
	return lp.fit, true
}

// Links returns the prices for Model.Links: each priced link's fitted
// figures, with pinned links' figures instead.
func (p *Prices) Links() map[Link]LinkCost {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[Link]LinkCost, len(p.links)+len(p.pinned))
	for l, lp := range p.links {
		if lp.ok {
			out[l] = lp.priced
		}
	}
	for l, c := range p.pinned {
		out[l] = c
	}
	return out
}

// Samples returns the one-way samples kept for link l (size in N,
// seconds in T), oldest first.
func (p *Prices) Samples(l Link) []perfmodel.Sample {
	p.mu.Lock()
	lp := p.links[l]
	p.mu.Unlock()
	if lp == nil {
		return nil
	}
	return lp.samples.Samples()
}
