// Command align computes the Smith-Waterman local alignment score of two
// generated DNA sequences as a wavefront of tiles, the regular DAG of
// Anahy's Figure 7a: tile (i, j) needs the last row of tile (i-1, j), the
// last column of tile (i, j-1) and the corner of tile (i-1, j-1). Each
// finished tile creates the tiles it was the last input of (-mode
// dataflow, the default); tiles carry their borders through a codec, so
// they run in any process.
//
//	go run ./examples/align -len 4000 -block 100 -trace align.json
//	pcorrun -n 4 align -len 6000
//
// The score is checked against a sequential run, and the utilisation of
// every VP of every process while the wavefront is at least as wide as the
// VPs of a process is printed from the trace. Two baselines have the root
// thread create every tile: -mode pipelined creates each as soon as the
// root has joined the two it needs, -mode barrier creates an anti-diagonal,
// joins it whole, then moves to the next.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/examples/internal/athreadmain"
)

// Scoring: match, mismatch, linear gap.
const (
	match    = 2
	mismatch = -1
	gap      = 1
)

// problem names the two sequences: every process generates them from the
// seed.
type problem struct {
	Seed uint64
	Len  int32
}

var (
	seqMu sync.Mutex
	seqs  = map[problem][2][]byte{}
)

// sequences returns the problem's two sequences: a random one, and a copy
// with 10% of its letters changed and a few insertions and deletions.
func sequences(p problem) (a, b []byte) {
	seqMu.Lock()
	defer seqMu.Unlock()
	if s, ok := seqs[p]; ok {
		return s[0], s[1]
	}
	r := rand.New(rand.NewPCG(p.Seed, 0xa11))
	const letters = "ACGT"
	a = make([]byte, p.Len)
	for i := range a {
		a[i] = letters[r.IntN(4)]
	}
	b = make([]byte, 0, p.Len)
	for i := 0; len(b) < int(p.Len); i = (i + 1) % int(p.Len) {
		switch x := r.IntN(100); {
		case x < 10:
			b = append(b, letters[r.IntN(4)])
		case x < 12: // deletion
		case x < 14:
			b = append(b, letters[r.IntN(4)], a[i])
		default:
			b = append(b, a[i])
		}
	}
	b = b[:p.Len]
	seqs[p] = [2][]byte{a, b}
	return a, b
}

// tileIn is a tile's input: where it is and its borders.
type tileIn struct {
	P      problem
	Block  int32
	Bi, Bj int32
	Top    []int32 // H[r0-1][c0-1 .. c1]: the corner, then the row above
	Left   []int32 // H[r0 .. r1][c0-1]
}

// tileInput is the input of tile (i, j), taken from the results of the
// tiles above, above-left and to the left (outOf gives a tile's result).
func tileInput(p problem, block int32, i, j int, outOf func(i, j int) *tileOut) tileIn {
	size := func(k int) int { return min(int(block), int(p.Len)-k*int(block)) }
	in := tileIn{P: p, Block: block, Bi: int32(i), Bj: int32(j)}
	in.Top = make([]int32, size(j)+1)
	if i > 0 {
		copy(in.Top[1:], outOf(i-1, j).Bottom)
		if j > 0 {
			corner := outOf(i-1, j-1).Bottom
			in.Top[0] = corner[len(corner)-1]
		}
	}
	in.Left = make([]int32, size(i))
	if j > 0 {
		copy(in.Left, outOf(i, j-1).Right)
	}
	return in
}

// cost is the tile's work in cells, its threads' scheduling cost.
func (in *tileIn) cost() int64 { return int64(len(in.Left) * (len(in.Top) - 1)) }

// tileOut is a tile's result.
type tileOut struct {
	Bottom []int32 // H[r1][c0 .. c1]
	Right  []int32 // H[r0 .. r1][c1]
	Max    int32
}

func appendInts(b []byte, v []int32) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func readInts(b []byte, max int) ([]int32, []byte, error) {
	if len(b) < 4 {
		return nil, nil, errors.New("short tile")
	}
	n := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if n > max || len(b) < 4*n {
		return nil, nil, errors.New("bad tile border length")
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, b[4*n:], nil
}

const maxBorder = 1 << 20

var inCodec = athread.CodecFuncs(
	func(b []byte, t tileIn) ([]byte, error) {
		b = binary.LittleEndian.AppendUint64(b, t.P.Seed)
		for _, x := range []int32{t.P.Len, t.Block, t.Bi, t.Bj} {
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		}
		return appendInts(appendInts(b, t.Top), t.Left), nil
	},
	func(b []byte) (tileIn, error) {
		var t tileIn
		if len(b) < 24 {
			return t, errors.New("short tile")
		}
		t.P.Seed = binary.LittleEndian.Uint64(b)
		f := make([]int32, 4)
		for i := range f {
			f[i] = int32(binary.LittleEndian.Uint32(b[8+4*i:]))
		}
		t.P.Len, t.Block, t.Bi, t.Bj = f[0], f[1], f[2], f[3]
		var err error
		if t.Top, b, err = readInts(b[24:], maxBorder); err != nil {
			return t, err
		}
		if t.Left, b, err = readInts(b, maxBorder); err != nil {
			return t, err
		}
		if len(b) != 0 || t.Block <= 0 || t.P.Len < 0 || t.P.Len > maxBorder {
			return t, errors.New("bad tile")
		}
		return t, nil
	})

var outCodec = athread.CodecFuncs(
	func(b []byte, t tileOut) ([]byte, error) {
		return binary.LittleEndian.AppendUint32(appendInts(appendInts(b, t.Bottom), t.Right), uint32(t.Max)), nil
	},
	func(b []byte) (tileOut, error) {
		var t tileOut
		var err error
		if t.Bottom, b, err = readInts(b, maxBorder); err != nil {
			return t, err
		}
		if t.Right, b, err = readInts(b, maxBorder); err != nil {
			return t, err
		}
		if len(b) != 4 {
			return t, errors.New("bad tile result")
		}
		t.Max = int32(binary.LittleEndian.Uint32(b))
		return t, nil
	})

var tile *athread.Func[tileIn, tileOut]

func init() {
	tile = athread.Register("align-tile", func(ctx context.Context, in tileIn) (tileOut, error) {
		return computeTile(in)
	}, inCodec, outCodec)
}

// computeTile fills one tile of the score matrix from its borders.
func computeTile(in tileIn) (tileOut, error) {
	a, b := sequences(in.P)
	n := int(in.P.Len)
	r0, c0 := int(in.Bi*in.Block), int(in.Bj*in.Block)
	r1, c1 := min(r0+int(in.Block), n), min(c0+int(in.Block), n)
	h, w := r1-r0, c1-c0
	if len(in.Top) != w+1 || len(in.Left) != h {
		return tileOut{}, fmt.Errorf("tile (%d,%d): borders of %d and %d, want %d and %d", in.Bi, in.Bj, len(in.Top), len(in.Left), w+1, h)
	}
	prev := append([]int32(nil), in.Top...) // row above, index 0 is column c0-1
	cur := make([]int32, w+1)
	out := tileOut{Right: make([]int32, h)}
	for i := 0; i < h; i++ {
		cur[0] = in.Left[i]
		ai := a[r0+i]
		for j := 1; j <= w; j++ {
			s := int32(mismatch)
			if ai == b[c0+j-1] {
				s = match
			}
			v := max(0, prev[j-1]+s, prev[j]-gap, cur[j-1]-gap)
			cur[j] = v
			out.Max = max(out.Max, v)
		}
		out.Right[i] = cur[w]
		prev, cur = cur, prev
	}
	out.Bottom = append([]int32(nil), prev[1:]...)
	return out, nil
}

// sequential is the whole matrix in one loop.
func sequential(p problem) int32 {
	a, b := sequences(p)
	n := int(p.Len)
	prev, cur := make([]int32, n+1), make([]int32, n+1)
	var best int32
	for i := 1; i <= n; i++ {
		cur[0] = 0
		for j := 1; j <= n; j++ {
			s := int32(mismatch)
			if a[i-1] == b[j-1] {
				s = match
			}
			cur[j] = max(0, prev[j-1]+s, prev[j]-gap, cur[j-1]-gap)
			best = max(best, cur[j])
		}
		prev, cur = cur, prev
	}
	return best
}

// wavefront computes the score with one thread per tile. The root thread
// creates the tiles in anti-diagonal order, each as soon as the two tiles
// it needs are joined: the next diagonal starts while the tiles of the
// last one still run. With barrier, it instead creates a whole diagonal,
// joins all of it, and only then moves on (the baseline). It returns the
// times the diagonals first and last had at least minWidth tiles.
func wavefront(ctx context.Context, p problem, block int32, minWidth int, barrier bool) (int32, time.Time, time.Time, error) {
	nb := (int(p.Len) + int(block) - 1) / int(block)
	type cell struct {
		h      *athread.Handle[tileOut]
		out    tileOut
		joined bool
	}
	tiles := make([][]cell, nb)
	for i := range tiles {
		tiles[i] = make([]cell, nb)
	}
	outOf := func(i, j int) *tileOut { return &tiles[i][j].out }
	var best int32
	join := func(bi, bj int) error {
		c := &tiles[bi][bj]
		if c.joined {
			return nil
		}
		out, err := c.h.Join(ctx)
		if err != nil {
			return err
		}
		c.out, c.joined = out, true
		best = max(best, out.Max)
		return nil
	}
	var wideFrom, wideTo time.Time
	for d := 0; d <= 2*(nb-1); d++ {
		lo, hi := max(0, d-nb+1), min(d, nb-1)
		wide := hi-lo+1 >= minWidth
		if wide && wideFrom.IsZero() {
			wideFrom = time.Now()
		}
		if !wide && !wideFrom.IsZero() && wideTo.IsZero() {
			wideTo = time.Now()
		}
		for bi := lo; bi <= hi; bi++ {
			bj := d - bi
			// The tiles above and to the left; the corner was joined
			// before either of them was created.
			if bi > 0 {
				if err := join(bi-1, bj); err != nil {
					return 0, wideFrom, wideTo, err
				}
			}
			if bj > 0 {
				if err := join(bi, bj-1); err != nil {
					return 0, wideFrom, wideTo, err
				}
			}
			in := tileInput(p, block, bi, bj, outOf)
			tiles[bi][bj].h = athread.Create(ctx, tile, in, athread.Attr{Cost: in.cost()})
		}
		if barrier {
			for bi := lo; bi <= hi; bi++ {
				if err := join(bi, d-bi); err != nil {
					return 0, wideFrom, wideTo, err
				}
			}
		}
	}
	if err := join(nb-1, nb-1); err != nil {
		return 0, wideFrom, wideTo, err
	}
	if wideTo.IsZero() {
		wideTo = time.Now()
	}
	return best, wideFrom, wideTo, nil
}

// dataflow computes the score with the tiles creating each other, as in
// the DAG of Figure 7a: the node of tile (i, j), a thread of this process,
// runs the tile (a registered thread, which may run in another process),
// keeps its borders, and creates the node of each neighbour (below, to the
// right) whose other input is already there; it then joins the nodes it
// created. The root only joins the node of tile (0, 0): no thread stands
// between a finished tile and the tiles it enables, so a thread that loses
// its CPU holds up the tiles that need its own, not every tile not yet
// created. It returns the times the first tile of the first diagonal at
// least minWidth wide, and of the first narrower one after it, was
// created.
func dataflow(ctx context.Context, p problem, block int32, minWidth int) (int32, time.Time, time.Time, error) {
	nb := (int(p.Len) + int(block) - 1) / int(block)
	type cell struct {
		need atomic.Int32 // inputs not yet there
		out  tileOut
	}
	tiles := make([][]cell, nb)
	for i := range tiles {
		tiles[i] = make([]cell, nb)
		for j := range tiles[i] {
			tiles[i][j].need.Store(int32(min(i, 1) + min(j, 1)))
		}
	}
	outOf := func(i, j int) *tileOut { return &tiles[i][j].out }
	var mu sync.Mutex
	var best int32
	created := make([]time.Time, 2*nb-1) // first creation in each diagonal
	mark := func(d int) {
		mu.Lock()
		if created[d].IsZero() {
			created[d] = time.Now()
		}
		mu.Unlock()
	}
	var node func(i, j int) func(ctx context.Context) (struct{}, error)
	node = func(i, j int) func(ctx context.Context) (struct{}, error) {
		return func(ctx context.Context) (struct{}, error) {
			in := tileInput(p, block, i, j, outOf)
			out, err := athread.Create(ctx, tile, in, athread.Attr{Cost: in.cost()}).Join(ctx)
			if err != nil {
				return struct{}{}, err
			}
			tiles[i][j].out = out
			mu.Lock()
			best = max(best, out.Max)
			mu.Unlock()
			var next []*athread.Handle[struct{}]
			for _, n := range [][2]int{{i + 1, j}, {i, j + 1}} {
				if n[0] < nb && n[1] < nb && tiles[n[0]][n[1]].need.Add(-1) == 0 {
					mark(n[0] + n[1])
					next = append(next, athread.Go(ctx, node(n[0], n[1])))
				}
			}
			for _, h := range next {
				if _, err := h.Join(ctx); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, nil
		}
	}
	mark(0)
	_, err := athread.Go(ctx, node(0, 0)).Join(ctx)
	var from, to time.Time
	for d := range created {
		lo, hi := max(0, d-nb+1), min(d, nb-1)
		switch wide := hi-lo+1 >= minWidth; {
		case wide && from.IsZero():
			from = created[d]
		case !wide && !from.IsZero() && to.IsZero():
			to = created[d]
		}
	}
	if to.IsZero() {
		to = time.Now()
	}
	return best, from, to, err
}

func main() {
	length := flag.Int("len", 3000, "length of each sequence")
	block := flag.Int("block", 100, "tile side")
	seed := flag.Uint64("seed", 1, "sequence generator seed")
	mode := flag.String("mode", "dataflow", "dataflow: the tiles create the tiles they enable; pipelined: the root creates each tile once it has joined the two it needs; barrier: the root creates an anti-diagonal, joins it whole, then the next")
	var from, to time.Time
	athreadmain.MainThen("align", func(ctx context.Context, rt *athread.Runtime) error {
		p := problem{Seed: *seed, Len: int32(*length)}
		t0 := time.Now()
		want := sequential(p)
		seq := time.Since(t0)
		t0 = time.Now()
		var got int32
		var f, t time.Time
		var err error
		switch *mode {
		case "dataflow":
			got, f, t, err = dataflow(ctx, p, int32(*block), rt.VPs())
		case "pipelined", "barrier":
			got, f, t, err = wavefront(ctx, p, int32(*block), rt.VPs(), *mode == "barrier")
		default:
			return fmt.Errorf("unknown mode %q (want dataflow, pipelined or barrier)", *mode)
		}
		if err != nil {
			return err
		}
		from, to = f, t
		par := time.Since(t0)
		if got != want {
			return fmt.Errorf("score %d, sequential %d", got, want)
		}
		fmt.Printf("alignment score %d of two %d-letter sequences in %v (sequential %v, speedup %.2fx)\n",
			got, *length, par.Round(time.Microsecond), seq.Round(time.Microsecond), seq.Seconds()/par.Seconds())
		return nil
	}, func(rt *athread.Runtime) error {
		u := rt.JobUtilisation(from, to)
		if u == nil {
			return nil
		}
		fmt.Printf("VP utilisation while the wavefront is at least %d tiles wide (%v):", rt.VPs(), to.Sub(from).Round(time.Microsecond))
		for _, x := range u {
			fmt.Printf(" %d.%d=%.0f%%", x.Proc, x.VP, 100*x.Busy)
		}
		fmt.Println()
		return nil
	})
}
