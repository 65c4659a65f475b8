package perfmodel

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// madScale turns a median absolute deviation into an estimate of the
// standard deviation of normally distributed samples.
const madScale = 1.4826

// Rule decides which samples of one configuration are anomalies. A sample
// t is dropped when
//
//	|t − median| > K · 1.4826 · max(MAD, Floor·median)
//
// where MAD is the median absolute deviation of the group: a robust
// z-score above K. The floor keeps a group whose samples mostly agree
// exactly (MAD = 0) from dropping every sample that differs at all. Groups
// of fewer than three samples are kept whole. The zero Rule uses K = 3 and
// Floor = 0.01.
type Rule struct {
	K     float64 // the robust z-score beyond which a sample is dropped (0: 3)
	Floor float64 // the least MAD, as a fraction of the median (0: 0.01)
}

func (r Rule) k() float64 {
	if r.K > 0 {
		return r.K
	}
	return 3
}

func (r Rule) floor() float64 {
	if r.Floor > 0 {
		return r.Floor
	}
	return 0.01
}

// Split divides times into those kept and those dropped as anomalies.
func (r Rule) Split(ts []float64) (keep, drop []float64) {
	if len(ts) < 3 {
		return slices.Clone(ts), nil
	}
	s := slices.Clone(ts)
	slices.Sort(s)
	med := stat.Quantile(0.5, stat.Empirical, s, nil)
	dev := make([]float64, len(s))
	for i, t := range s {
		dev[i] = math.Abs(t - med)
	}
	slices.Sort(dev)
	mad := stat.Quantile(0.5, stat.Empirical, dev, nil)
	limit := r.k() * madScale * math.Max(mad, r.floor()*math.Abs(med))
	for _, t := range ts {
		if math.Abs(t-med) > limit {
			drop = append(drop, t)
		} else {
			keep = append(keep, t)
		}
	}
	return keep, drop
}

// Observation is the representative time of one configuration (n, p):
// the mean of its samples that the rule kept (and their median, for
// times skewed to the right, such as round trips delayed by scheduling,
// where the mean carries the delays the rule kept).
type Observation struct {
	N       float64 `json:"n"`                // the problem size
	P       float64 `json:"p,omitempty"`      // the process count (0: none)
	T       float64 `json:"t"`                // mean of the kept samples, seconds
	Median  float64 `json:"median,omitempty"` // their median, seconds
	SD      float64 `json:"sd"`               // their standard deviation
	Kept    int     `json:"kept"`             // samples kept
	Dropped int     `json:"dropped"`          // samples dropped as anomalies
}

// median is the middle of ts, or the mean of the two middle values of an
// even count (0 for none); ts is sorted in place.
func median(ts []float64) float64 {
	if len(ts) == 0 {
		return 0
	}
	slices.Sort(ts)
	m := len(ts) / 2
	if len(ts)%2 == 0 {
		return (ts[m-1] + ts[m]) / 2
	}
	return ts[m]
}

// Summarize groups samples by (N, P), drops the anomalies of each group by
// rule and returns one Observation per group, ordered by P then N.
func Summarize(samples []Sample, rule Rule) []Observation {
	gs := group(samples)
	out := make([]Observation, 0, len(gs))
	for _, g := range gs {
		keep, drop := rule.Split(g.ts)
		o := Observation{N: g.n, P: g.p, Kept: len(keep), Dropped: len(drop)}
		o.T, o.SD = stat.MeanStdDev(keep, nil)
		o.Median = median(keep)
		if len(keep) < 2 {
			o.SD = 0
		}
		out = append(out, o)
	}
	return out
}

// Kept returns one Observation per sample that rule keeps within its
// group (N, P), its time as T and Median, ordered by P then N: for a fit
// through every sample, whose residual spread is then how far one sample
// strays from the model rather than how far a group's mean does.
func Kept(samples []Sample, rule Rule) []Observation {
	var out []Observation
	for _, g := range group(samples) {
		keep, _ := rule.Split(g.ts)
		for _, t := range keep {
			out = append(out, Observation{N: g.n, P: g.p, T: t, Median: t, Kept: 1})
		}
	}
	return out
}

// sampleGroup is the finite times of the samples of one (N, P).
type sampleGroup struct {
	n, p float64
	ts   []float64
}

// group gathers the finite times of samples by (N, P), ordered by P then N.
func group(samples []Sample) []sampleGroup {
	type key struct{ n, p float64 }
	at := map[key]int{}
	var gs []sampleGroup
	for _, s := range samples {
		if math.IsNaN(s.T) || math.IsInf(s.T, 0) {
			continue
		}
		k := key{s.N, s.P}
		i, ok := at[k]
		if !ok {
			i = len(gs)
			at[k] = i
			gs = append(gs, sampleGroup{n: s.N, p: s.P})
		}
		gs[i].ts = append(gs[i].ts, s.T)
	}
	slices.SortFunc(gs, func(a, b sampleGroup) int {
		if c := cmp.Compare(a.p, b.p); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	return gs
}
