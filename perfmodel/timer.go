package perfmodel

import (
	"slices"
	"sync"
	"time"
)

// DefaultMaxSamples bounds the samples a region keeps: past it the oldest
// are overwritten, so a recorder left on holds bounded memory.
const DefaultMaxSamples = 1 << 16

// Sample is one timed execution of a region.
type Sample struct {
	N float64 `json:"n"`           // size parameter (problem or message size)
	P float64 `json:"p,omitempty"` // process count (0 when not given)
	T float64 `json:"t"`           // seconds
}

// Recorder collects timed samples of named regions. The zero value is
// ready to use; it is safe for concurrent use.
type Recorder struct {
	// MaxSamples bounds each region's samples (DefaultMaxSamples when 0).
	MaxSamples int

	mu      sync.Mutex
	regions map[string]*Region
}

// Region is one named code region of a Recorder. Timing it costs two
// monotonic clock reads and one short critical section per sample
// (BenchmarkRegion states the figure).
type Region struct {
	name string
	max  int

	mu      sync.Mutex
	samples []Sample
	next    int // overwrite position once samples is full
	total   int64
}

// Region returns the region called name, creating it on first use. Keep
// the result: timing through it avoids the name lookup.
func (r *Recorder) Region(name string) *Region {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g, ok := r.regions[name]; ok {
		return g
	}
	if r.regions == nil {
		r.regions = map[string]*Region{}
	}
	max := r.MaxSamples
	if max <= 0 {
		max = DefaultMaxSamples
	}
	g := &Region{name: name, max: max}
	r.regions[name] = g
	return g
}

// Names lists the recorder's regions in name order.
func (r *Recorder) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.regions))
	for n := range r.regions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Name is the region's name.
func (g *Region) Name() string { return g.name }

// Start returns the time a region execution starts, for Stop.
func (g *Region) Start() time.Time { return time.Now() }

// Stop records an execution that began at start, for size n and p
// processes, and returns its duration.
func (g *Region) Stop(start time.Time, n, p float64) time.Duration {
	d := time.Since(start)
	g.Add(Sample{N: n, P: p, T: d.Seconds()})
	return d
}

// Add records a sample measured elsewhere (a passive sample).
func (g *Region) Add(s Sample) {
	g.mu.Lock()
	if len(g.samples) < g.max {
		g.samples = append(g.samples, s)
	} else {
		g.samples[g.next] = s
		g.next = (g.next + 1) % g.max
	}
	g.total++
	g.mu.Unlock()
}

// Samples returns a copy of the samples kept, oldest first.
func (g *Region) Samples() []Sample {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Sample, 0, len(g.samples))
	out = append(out, g.samples[g.next:]...)
	return append(out, g.samples[:g.next]...)
}

// Total is the number of samples ever recorded, kept or overwritten.
func (g *Region) Total() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}

// Reset forgets the region's samples.
func (g *Region) Reset() {
	g.mu.Lock()
	g.samples, g.next = g.samples[:0], 0
	g.mu.Unlock()
}
