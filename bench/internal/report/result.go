// Package report holds benchmark results and writes them: an aligned
// OSU-style table, JSON, CSV, and an SVG plot of the round-trip and
// throughput curves (the analogue of the pCoR paper's Figure 3).
package report

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/pcor-go/pcor/bench/internal/stats"
)

// Point is the summary of one measurement: one series at one size (or
// thread count).
type Point struct {
	Series  string  `json:"series"` // "pcor/blocking", "udp", "tcp", "chan", ...
	Size    int     `json:"size"`
	Threads int     `json:"threads,omitempty"`
	Median  float64 `json:"median"`
	P99     float64 `json:"p99"`
	N       int     `json:"samples"`
	// Reps is the number of repetitions (interleaved with the other
	// series); Median is the median of their values (for round trips each
	// repetition's median), Lo and Hi the smallest and largest.
	Reps int     `json:"reps,omitempty"`
	Lo   float64 `json:"lo,omitempty"`
	Hi   float64 `json:"hi,omitempty"`
	// Per is what both processes spent per operation (round trip or
	// message), when it was measured.
	Per *PerOp `json:"per_op,omitempty"`
	Err string `json:"error,omitempty"`
}

// PerOp is what a series cost per round trip or message, summed over the
// processes taking part.
type PerOp struct {
	CPU       float64 `json:"cpu_us"`   // CPU time, µs
	Switches  float64 `json:"switches"` // context switches, voluntary and involuntary
	Voluntary float64 `json:"voluntary"`
	Syscalls  float64 `json:"syscalls"` // negative: not counted
}

// Spread is (Hi-Lo)/Median, the relative spread of the repetitions.
func (p Point) Spread() float64 {
	if p.Median == 0 || p.Reps < 2 {
		return 0
	}
	return (p.Hi - p.Lo) / p.Median
}

// Ratio compares the medians of a pcor series and a baseline at one size
// (Baseline "best": the best pcor value at any thread count).
type Ratio struct {
	Series   string  `json:"series"`
	Baseline string  `json:"baseline"`
	Size     int     `json:"size"`
	Threads  int     `json:"threads,omitempty"`
	Value    float64 `json:"value"`
}

// Fit is a Hockney fit of one series.
type Fit struct {
	Series string `json:"series"`
	stats.Hockney
}

// Result is one subcommand's run.
type Result struct {
	Command   string   `json:"command"` // roundtrip, throughput, rate, contention
	Placement string   `json:"placement"`
	Fabric    string   `json:"fabric"`
	Unit      string   `json:"unit"` // "us", "MB/s", "msg/s"
	Series    []string `json:"series"`
	Baselines []string `json:"baselines"`
	Points    []Point  `json:"points"`
	Ratios    []Ratio  `json:"ratios"`
	Fits      []Fit    `json:"fits,omitempty"`
	Notes     []string `json:"notes,omitempty"`
}

// Add records a point, adding its series to the list on first sight.
func (r *Result) Add(p Point) {
	if !slices.Contains(r.Series, p.Series) {
		r.Series = append(r.Series, p.Series)
	}
	r.Points = append(r.Points, p)
}

// AddSamples summarises samples into a point (or records err).
func (r *Result) AddSamples(series string, size, threads int, xs []float64, err error) {
	p := Point{Series: series, Size: size, Threads: threads}
	if err == nil {
		var s stats.Summary
		if s, err = stats.Summarize(xs); err == nil {
			p.Median, p.P99, p.N = s.Median, s.P99, s.N
		}
	}
	if err != nil {
		p.Err = err.Error()
	}
	r.Add(p)
}

// AddReps summarises repetitions into a point: reps holds one value per
// repetition, all every sample (for the p99; nil: reps), per the spending
// per operation (may be nil).
func (r *Result) AddReps(series string, size, threads int, reps, all []float64, per *PerOp, err error) {
	p := Point{Series: series, Size: size, Threads: threads, Per: per}
	if all == nil {
		all = reps
	}
	if err == nil {
		var s, a stats.Summary
		if s, err = stats.Summarize(reps); err == nil {
			a, err = stats.Summarize(all)
			p.Median, p.P99, p.N = s.Median, a.P99, a.N
			p.Reps, p.Lo, p.Hi = s.N, s.Min, s.Max
		}
	}
	if err != nil {
		p.Err = err.Error()
	}
	r.Add(p)
}

// IsPcor reports whether a series is a pcor measurement ("pcor/MODE"), not
// a baseline (among which pcor over another fabric, "pcor-udp/MODE").
func IsPcor(series string) bool { return strings.HasPrefix(series, "pcor/") }

// Get returns the point of a series at size and threads.
func (r *Result) Get(series string, size, threads int) (Point, bool) {
	for _, p := range r.Points {
		if p.Series == series && p.Size == size && p.Threads == threads {
			return p, p.Err == ""
		}
	}
	return Point{}, false
}

// keys lists the (size, threads) rows in order of first appearance.
func (r *Result) keys() [][2]int {
	var out [][2]int
	for _, p := range r.Points {
		k := [2]int{p.Size, p.Threads}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// Finish computes the ratios of medians (every pcor series against every
// baseline; for contention against the best pcor value) and, for round
// trips, the Hockney fit of each series on one-way times.
func (r *Result) Finish() {
	r.Ratios = nil
	for _, s := range r.Series {
		if !IsPcor(s) {
			continue
		}
		best := 0.0
		for _, p := range r.Points {
			if p.Series == s && p.Err == "" && p.Median > best {
				best = p.Median
			}
		}
		for _, k := range r.keys() {
			p, ok := r.Get(s, k[0], k[1])
			if !ok {
				continue
			}
			if r.Command == "contention" {
				if best > 0 {
					r.Ratios = append(r.Ratios, Ratio{s, "best", k[0], k[1], p.Median / best})
				}
				continue
			}
			for _, b := range r.Baselines {
				if q, ok := r.Get(b, k[0], k[1]); ok && q.Median > 0 {
					r.Ratios = append(r.Ratios, Ratio{s, b, k[0], k[1], p.Median / q.Median})
				}
			}
		}
	}
	r.Fits = nil
	if r.Command != "roundtrip" {
		return
	}
	for _, s := range r.Series {
		var sz []int
		var us []float64
		for _, p := range r.Points {
			if p.Series == s && p.Err == "" {
				sz = append(sz, p.Size)
				us = append(us, p.Median/2)
			}
		}
		if h, err := stats.FitHockney(sz, us); err == nil {
			r.Fits = append(r.Fits, Fit{s, h})
		}
	}
}

// Ratio returns the ratio of series to baseline at size and threads.
func (r *Result) Ratio(series, baseline string, size, threads int) (float64, bool) {
	for _, x := range r.Ratios {
		if x.Series == series && x.Baseline == baseline && x.Size == size && x.Threads == threads {
			return x.Value, true
		}
	}
	return math.NaN(), false
}

// MarshalJSON writes an unbounded bandwidth (times that do not grow with
// size) as null, which JSON can carry and +Inf it cannot.
func (f Fit) MarshalJSON() ([]byte, error) {
	fin := func(v float64) *float64 {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		Series string   `json:"series"`
		A      float64  `json:"latency_us"`
		B      *float64 `json:"bandwidth_mbs"`
		NHalf  *float64 `json:"n_half_bytes"`
	}{f.Series, f.A, fin(f.B), fin(f.NHalf)})
}

// UnmarshalJSON reads what MarshalJSON writes (null as +Inf).
func (f *Fit) UnmarshalJSON(b []byte) error {
	var v struct {
		Series string   `json:"series"`
		A      float64  `json:"latency_us"`
		B      *float64 `json:"bandwidth_mbs"`
		NHalf  *float64 `json:"n_half_bytes"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	f.Series, f.A, f.B, f.NHalf = v.Series, v.A, math.Inf(1), math.Inf(1)
	if v.B != nil {
		f.B = *v.B
	}
	if v.NHalf != nil {
		f.NHalf = *v.NHalf
	}
	return nil
}
