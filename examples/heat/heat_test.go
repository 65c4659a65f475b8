package main

import (
	"math"
	"strings"
	"testing"

	"github.com/pcor-go/pcor/perfmodel"
)

func TestBlocksCoverThePlate(t *testing.T) {
	for _, n := range []int{7, 64, 100} {
		for p := 2; p <= 7; p++ {
			next := 0
			for w := 1; w < p; w++ {
				lo, hi := block(n, p, w)
				if lo != next || hi-lo < n/(p-1) || hi-lo > n/(p-1)+1 {
					t.Fatalf("n=%d p=%d worker %d: rows %d-%d after %d", n, p, w, lo, hi, next)
				}
				next = hi
			}
			if next != n {
				t.Fatalf("n=%d p=%d: blocks end at %d", n, p, next)
			}
		}
	}
}

func TestRowsCodec(t *testing.T) {
	rows := []float64{1, 2, 3, 4, 5, 6}
	n, lo, hi, body, err := decodeRows(appendRows(nil, 8, 4, 6, append(rows, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))
	got := make([]float64, 16)
	if err == nil {
		decodeFloats(body, got)
	}
	if err != nil || n != 8 || lo != 4 || hi != 6 || got[15] != 16 {
		t.Fatalf("%d %d %d %v %v", n, lo, hi, got, err)
	}
	bad := appendRows(nil, 3, 1, 3, rows)
	if _, _, _, _, err := decodeRows(bad[:len(bad)-8]); err == nil {
		t.Fatal("truncated block accepted")
	}
	if _, _, _, _, err := decodeRows(appendRows(nil, 3, 5, 4, nil)); err == nil {
		t.Fatal("reversed rows accepted")
	}
}

// One sweep of a block equals the same sweep of the whole plate.
func TestJacobiBlock(t *testing.T) {
	n := 6
	plate := make([]float64, n*n)
	for i := range plate {
		plate[i] = float64(i % 7)
	}
	whole := make([]float64, (n+2)*n)
	copy(whole[n:], plate)
	outWhole := make([]float64, (n+2)*n)
	jacobi(whole, outWhole, n, 0, n)
	// Rows 2-3 with their ghost rows 1 and 4.
	part := make([]float64, 4*n)
	copy(part, plate[1*n:5*n])
	outPart := make([]float64, 4*n)
	jacobi(part, outPart, n, 2, 2)
	for i := range 2 * n {
		if outPart[n+i] != outWhole[3*n+i] {
			t.Fatalf("point %d: block %v, plate %v", i, outPart[n+i], outWhole[3*n+i])
		}
	}
}

func TestProgramComposition(t *testing.T) {
	set := &perfmodel.Set{}
	set.Put(regScatter, &perfmodel.Model{Form: commForm, Coef: []float64{1e-3, 1e-9}})
	set.Put(regCollect, &perfmodel.Model{Form: commForm, Coef: []float64{2e-3, 3e-9}})
	set.Put(regSweep, &perfmodel.Model{Form: sweepForm, Coef: []float64{2e-9, 4e-10}})
	set.Put(regCache, &perfmodel.Model{Form: perfmodel.Form{{}}, Coef: []float64{40000}})
	set.Put(restName(1), &perfmodel.Model{Form: restForm, Coef: []float64{5e-5, 3e-5, 7e-10, 6e-11}})
	set.Put(restName(2), &perfmodel.Model{Form: restForm, Coef: []float64{1, 1, 1, 1}}) // not p = 3's
	set.Put(shareName(3), &perfmodel.Model{Form: perfmodel.Form{{}}, Coef: []float64{0.25}})
	pg, err := program(set, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	n, p := 100.0, 3.0
	x, bytes := n*50, 8*n*n
	// The block's points enter the sweep's CPU time, alone and times the
	// share of its 16x bytes beyond the cache, and the rest's, alone and
	// times p.
	miss := 1 - 40000/(16*x)
	want := (2*1e-3 + 1e-9*bytes) + 10*(2e-9*x+4e-10*x*miss+5e-5+3e-5*p+7e-10*x+6e-11*x*p)/0.25 + (2*2e-3 + 3e-9*bytes)
	if got := pg.Predict(n, p).T; math.Abs(got-want) > 1e-12 {
		t.Fatalf("program %v, want %v", got, want)
	}
	if _, err := program(set, 10, 4); err == nil {
		t.Fatal("a program for a process count without models")
	}
}

// The plate the workers compute, block by block with their halo rows
// exchanged, is the serial solution bit for bit, whatever the blocks: the
// master's check of every solve rests on it.
func TestBlocksMatchSerialSolve(t *testing.T) {
	const n, iters = 37, 9
	want := gridHash(serialSolve(n, iters))
	for p := 2; p <= 6; p++ {
		type blk struct {
			lo, rows  int
			cur, next []float64
		}
		var bs []*blk
		plate := make([]float64, n*n)
		initPlate(plate, n)
		for w := 1; w < p; w++ {
			lo, hi := block(n, p, w)
			b := &blk{lo: lo, rows: hi - lo, cur: make([]float64, (hi-lo+2)*n), next: make([]float64, (hi-lo+2)*n)}
			copy(b.cur[n:], plate[lo*n:hi*n])
			bs = append(bs, b)
		}
		for range iters {
			for i, b := range bs {
				if i > 0 {
					up := bs[i-1]
					copy(b.cur[:n], up.cur[up.rows*n:(up.rows+1)*n])
				}
				if i < len(bs)-1 {
					copy(b.cur[(b.rows+1)*n:], bs[i+1].cur[n:2*n])
				}
			}
			for _, b := range bs {
				jacobi(b.cur, b.next, n, b.lo, b.rows)
				b.cur, b.next = b.next, b.cur
			}
		}
		for _, b := range bs {
			copy(plate[b.lo*n:], b.cur[n:(b.rows+1)*n])
		}
		if got := gridHash(plate); got != want {
			t.Fatalf("p=%d: blocks' plate differs from the serial one", p)
		}
	}
}

// Each solve's slowest worker is the one whose iterations took longest,
// its CPU time comes with it, split into its sweep's and the rest, and the collection is what the solve took
// besides the scatter and those iterations.
func TestSlowestWorkerOfEachSolve(t *testing.T) {
	const n, iters = 90, 10
	regs := map[string][]perfmodel.Sample{
		"total":   {{N: n, P: 4, T: 1.0}, {N: n, P: 4, T: 2.0}},
		"scatter": {{N: n, P: 4, T: 0.1}, {N: n, P: 4, T: 0.2}},
	}
	worker := func(it0, it1, cpu0, cpu1 float64) map[int]map[string][]perfmodel.Sample {
		return map[int]map[string][]perfmodel.Sample{n: {
			"iter":      {{N: 30 * n, P: 4, T: it0}, {N: 30 * n, P: 4, T: it1}},
			"cpu":       {{N: 30 * n, P: 4, T: cpu0}, {N: 30 * n, P: 4, T: cpu1}},
			"sweep-cpu": {{N: 30 * n, P: 4, T: cpu0 * 0.75}, {N: 30 * n, P: 4, T: cpu1 * 0.75}},
		}}
	}
	// Worker 2 is the slowest in the first solve, worker 3 in the second.
	workers := []map[int]map[string][]perfmodel.Sample{nil, worker(0.05, 0.06, 0.011, 0.012), worker(0.08, 0.07, 0.021, 0.022), worker(0.07, 0.15, 0.031, 0.032)}
	slowest(regs, workers, n, iters)
	want := map[string][]float64{"slowest": {0.08, 0.15}, "slowest-cpu": {0.021, 0.032},
		"slowest-sweep-cpu": {0.021 * 0.75, 0.032 * 0.75}, "slowest-rest-cpu": {0.021 * 0.25, 0.032 * 0.25},
		"collect": {1.0 - 0.1 - 0.8, 2.0 - 0.2 - 1.5}}
	for _, s := range regs["slowest-rest-cpu"] {
		if s.N != 30*n || s.P != 4 {
			t.Fatalf("rest of the CPU time at (%v, %v), want (x, p) = (%v, 4)", s.N, s.P, 30*n)
		}
	}
	for name, ts := range want {
		got := regs[name]
		if len(got) != len(ts) {
			t.Fatalf("%s: %d samples, want %d", name, len(got), len(ts))
		}
		for i, w := range ts {
			if math.Abs(got[i].T-w) > 1e-12 {
				t.Errorf("%s, solve %d: %v, want %v", name, i, got[i].T, w)
			}
		}
	}
}

// -fit names the plates or process counts the models are fitted on; the
// sizes listed are fitted and the sizes between them are not.
func TestParseFit(t *testing.T) {
	fitN, _, _, err := parseFit("n=512,768,1024,1536,1792")
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]bool{512: true, 1536: true, 1792: true, 640: false, 896: false, 1280: false, 2048: false} {
		if fitN(n) != want {
			t.Errorf("n=%d fitted: %v, want %v", n, fitN(n), want)
		}
	}
	fitN, _, _, err = parseFit("n<=1024")
	if err != nil || !fitN(1024) || fitN(1280) {
		t.Fatalf("n<=1024: %v", err)
	}
	fitN, fitP, _, err := parseFit("3,4")
	if err != nil || fitN != nil || !fitP[3] || !fitP[4] || fitP[5] {
		t.Fatalf("3,4: %v %v", fitP, err)
	}
	for _, bad := range []string{"n=", "n=512,x", "n<=0", "three"} {
		if _, _, _, err := parseFit(bad); err == nil {
			t.Errorf("-fit %q accepted", bad)
		}
	}
}

// The region models are fitted to each configuration's median sample, as
// predictions are judged against the median solve: with skewed samples
// (one high in five) the sweep's coefficients and its cache come back
// from the medians.
func TestRegionsFitMedians(t *testing.T) {
	const cache = 3e6
	sweep := func(x, _ float64) float64 { return 1e-9*x + 5e-10*x*missShare(16*x, cache) }
	rest := func(x, p float64) float64 { return 1e-4 + 2e-5*p + 3e-10*x + 4e-11*x*p }
	var runs []Samples
	for _, p := range []float64{3, 4, 5} {
		r := Samples{P: int(p), Iters: 10, Fit: true, Regions: map[string][]perfmodel.Sample{}}
		for _, n := range []float64{256, 512, 768, 1024} {
			x := points(n, p)
			for _, f := range []float64{0.9, 1, 1, 1.1, 1.25} {
				add := func(name string, s perfmodel.Sample) { r.Regions[name] = append(r.Regions[name], s) }
				sw, re := f*sweep(x, p), f*rest(x, p)
				add(regScatter, perfmodel.Sample{N: n, P: p, T: f * 1e-3 * p})
				add(regCollect, perfmodel.Sample{N: n, P: p, T: f * 2e-3 * p})
				add(regSweep, perfmodel.Sample{N: x, P: p, T: sw})
				add(regRest, perfmodel.Sample{N: x, P: p, T: re})
				add(regCPU, perfmodel.Sample{N: x, P: p, T: sw + re})
				add(regWall, perfmodel.Sample{N: x, P: p, T: 4 * (sw + re)})
			}
		}
		runs = append(runs, r)
	}
	set, ps, err := fitRegions(runs, func(Samples) bool { return true }, &strings.Builder{})
	if err != nil || len(ps) != 3 {
		t.Fatalf("fit: %v (process counts %v)", err, ps)
	}
	for _, c := range []struct {
		name string
		f    func(x, p float64) float64
	}{{regSweep, sweep}, {regRest, rest}} {
		for _, p := range []float64{3, 4, 6} {
			m := set.Models[c.name]
			x := points(900, p)
			at := func(x, p float64) (float64, float64) { return x, p }
			if c.name == regRest {
				// Apart for one neighbour (p = 3) and two.
				m = set.Models[restName(neighbours(int(p)))]
			} else {
				at = sweepArg(set.Models[regCache].Coef[0])
			}
			if got, want := m.Predict(at(x, p)).T, c.f(x, p); math.Abs(got-want) > 1e-3*want {
				t.Errorf("%s at x = %v, p = %v: %v, want the medians' %v", c.name, x, p, got, want)
			}
		}
	}
}

// At p = 3 the slowest worker has one neighbour, from p = 4 two (the
// middle workers exchange the most).
func TestNeighbours(t *testing.T) {
	for p, want := range map[int]int{2: 0, 3: 1, 4: 2, 7: 2} {
		if got := neighbours(p); got != want {
			t.Errorf("neighbours(%d) = %d, want %d", p, got, want)
		}
	}
}

// The sweep's cost per point is flat while its block fits the cache and
// rises with the share of the block beyond it: fitSweep finds the cache
// (within the grid's 2%) and both costs from blocks on both sides of it,
// and predicts the blocks between them.
func TestSweepCache(t *testing.T) {
	const b, c, cache = 1.5e-9, 1.2e-9, 7e6
	truth := func(x float64) float64 { return b*x + c*x*missShare(bytesPerPoint*x, cache) }
	var obs []perfmodel.Observation
	for _, n := range []float64{512, 768, 1024, 1536, 1792} {
		for _, p := range []float64{3, 4, 5, 6, 7} {
			x := points(n, p)
			obs = append(obs, perfmodel.Observation{N: x, P: p, T: truth(x), Kept: 1})
		}
	}
	m, got, err := fitSweep(obs)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-cache) > 0.021*cache {
		t.Errorf("cache %.3g bytes, want %.3g", got, float64(cache))
	}
	if math.Abs(m.Coef[0]-b) > 0.02*b || math.Abs(m.Coef[1]-c) > 0.1*c {
		t.Errorf("costs per point %.4g and %.4g, want %.4g and %.4g", m.Coef[0], m.Coef[1], b, c)
	}
	for _, x := range []float64{points(640, 7), points(896, 5), points(1280, 4)} {
		if e, want := m.Predict(sweepArg(got)(x, 0)).T, truth(x); math.Abs(e-want) > 0.02*want {
			t.Errorf("x = %v: %.4g, want %.4g", x, e, want)
		}
	}
	// Nothing to fit: a single block size.
	if _, _, err := fitSweep(obs[:1]); err == nil {
		t.Error("fitted a cache to one observation")
	}
}
