package routing

import (
	"math"
	"testing"
	"time"
)

// Measure leaves untimed the first turn over the sizes and the first
// round trip of every block: a link's first round trips and the first of
// each new size pay for what came before, which no sample may carry.
func TestMeasureWarmsUp(t *testing.T) {
	var p Prices
	l := Link{Peer: 1, Fabric: "udp", Network: "x"}
	sizes := []int{16, 4096, 64 << 10}
	steady := func(s int) time.Duration { return 2 * (50*time.Microsecond + time.Duration(s)*10*time.Nanosecond) }
	calls, last := 0, -1
	err := p.Measure(l, sizes, 12, func(s int) (time.Duration, error) {
		calls++
		d := steady(s)
		switch {
		case calls <= 5:
			d *= 100 // a cold link
		case s != last:
			d *= 10 // the size before left the link busy
		}
		last = s
		return d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	samples := p.Samples(l)
	if len(samples) != 12*len(sizes) {
		t.Fatalf("%d samples, want %d", len(samples), 12*len(sizes))
	}
	for _, s := range samples {
		if want := steady(int(s.N)).Seconds() / 2; math.Abs(s.T-want) > 1e-9 {
			t.Fatalf("%v-byte sample %v s, want the steady %v s", s.N, s.T, want)
		}
	}
	// Blocks of at most 5: 12 = 5+5+2, each with one untimed round trip,
	// after a first untimed turn of 5+1 per size.
	if want := len(sizes) * (6 + 6 + 6 + 3); calls != want {
		t.Fatalf("%d round trips, want %d", calls, want)
	}
}

// A link's price follows the typical (median) time per size, not the
// mean: one-way times are skewed to the right by waits for a CPU (here a
// tail to 1.9 times the typical time, all of it kept by the anomaly
// rule), which a mean carries into both coefficients (+21% here).
func TestPricesFollowMedian(t *testing.T) {
	var p Prices
	l := Link{Peer: 1, Fabric: "udp", Network: "x"}
	const lat, bw = 50e-6, 200e6
	skew := []float64{-0.3, -0.25, -0.2, -0.15, -0.1, -0.05, -0.02, 0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	for _, m := range ProbeSizes {
		for _, k := range skew {
			p.Observe(l, m, time.Duration((lat+float64(m)/bw)*(1+k)*1e9))
		}
	}
	p.Refit()
	c := p.Links()[l]
	if got := c.Latency.Seconds(); math.Abs(got-lat) > 0.05*lat {
		t.Errorf("latency %v, want %v within 5%%", c.Latency, time.Duration(lat*1e9))
	}
	if math.Abs(c.Bandwidth-bw) > 0.05*bw {
		t.Errorf("bandwidth %.3g B/s, want %.3g within 5%%", c.Bandwidth, bw)
	}
}
