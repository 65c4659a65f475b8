package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/pcor-go/pcor/athread"
)

// The three case studies of the real runs. Every process registers them,
// in this order.

func init() {
	fibFunc = athread.Register("hws.fib", fibBody, athread.Fixed[fibArgs](), athread.Fixed[int64]())
	queensFunc = athread.Register("hws.nqueens", queensBody, athread.Fixed[queens](), athread.Fixed[int64]())
	productFunc = athread.Register("hws.matmul", productBody, productCodec, blockCodec)
}

type fibArgs struct{ N, Cutoff int64 }

var fibFunc *athread.Func[fibArgs, int64]

func fibBody(ctx context.Context, a fibArgs) (int64, error) {
	if a.N <= a.Cutoff || a.N < 2 {
		return fibSeq(a.N), nil
	}
	x := athread.Create(ctx, fibFunc, fibArgs{a.N - 1, a.Cutoff}, athread.Attr{Cost: fibCalls(a.N - 1)})
	y := athread.Create(ctx, fibFunc, fibArgs{a.N - 2, a.Cutoff}, athread.Attr{Cost: fibCalls(a.N - 2)})
	vx, err := x.Join(ctx)
	if err != nil {
		return 0, err
	}
	vy, err := y.Join(ctx)
	return vx + vy, err
}

func fibSeq(n int64) int64 {
	if n < 2 {
		return n
	}
	return fibSeq(n-1) + fibSeq(n-2)
}

// fibCalls is the number of calls fibSeq(n) makes: the cost hint of a
// thread computing fib(n).
func fibCalls(n int64) int64 { return 2*fibWant(min(n, 90)+1) - 1 }

// fibWant is fib(n) by iteration.
func fibWant(n int64) int64 {
	a, b := int64(0), int64(1)
	for range n {
		a, b = b, a+b
	}
	return a
}

// queens is a partial placement: the queens of rows 0..Row-1 given as the
// occupied columns and diagonals. With Split, a thread takes the columns
// Cand of row Row (all the free ones when Cand is 0 and Given is not set)
// and splits them in two halves, one thread each, until one is left, which
// it places before doing the same with the next row: a divide-and-conquer
// loop, whose steals take half of what is left, as Fibonacci's do. Without
// Split, a thread creates one thread per free column of the next row (the
// classic formulation, whose root has N children).
type queens struct {
	N, Row, Cutoff int32
	Cols, LD, RD   uint32
	Split, Given   bool
	Cand           uint32
}

var queensFunc *athread.Func[queens, int64]

func queensBody(ctx context.Context, q queens) (int64, error) {
	full := uint32(1)<<q.N - 1
	if q.Split {
		return queensSplit(ctx, q, full)
	}
	if q.Row >= q.Cutoff {
		return queensSeq(full, q.Cols, q.LD, q.RD), nil
	}
	var hs []*athread.Handle[int64]
	for free := full &^ (q.Cols | q.LD | q.RD); free != 0; {
		b := free & -free
		free ^= b
		hs = append(hs, athread.Create(ctx, queensFunc, queens{N: q.N, Row: q.Row + 1, Cutoff: q.Cutoff,
			Cols: q.Cols | b, LD: (q.LD | b) << 1 & full, RD: (q.RD | b) >> 1}))
	}
	return joinSum(ctx, hs)
}

// queensSplit is queensBody with Split.
func queensSplit(ctx context.Context, q queens, full uint32) (int64, error) {
	for {
		if !q.Given {
			if q.Row >= q.Cutoff {
				return queensSeq(full, q.Cols, q.LD, q.RD), nil
			}
			q.Cand, q.Given = full&^(q.Cols|q.LD|q.RD), true
		}
		switch n := bits.OnesCount32(q.Cand); {
		case n == 0:
			return 0, nil
		case n > 1:
			// The lower half of the candidates, then the upper half.
			lo, c := uint32(0), q.Cand
			for range n / 2 {
				b := c & -c
				lo |= b
				c ^= b
			}
			a, b := q, q
			a.Cand, b.Cand = lo, q.Cand&^lo
			return joinSum(ctx, []*athread.Handle[int64]{
				athread.Create(ctx, queensFunc, a), athread.Create(ctx, queensFunc, b)})
		}
		b := q.Cand
		q = queens{N: q.N, Row: q.Row + 1, Cutoff: q.Cutoff, Split: true,
			Cols: q.Cols | b, LD: (q.LD | b) << 1 & full, RD: (q.RD | b) >> 1}
	}
}

func joinSum(ctx context.Context, hs []*athread.Handle[int64]) (int64, error) {
	var sum int64
	for _, h := range hs {
		v, err := h.Join(ctx)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

func queensSeq(full, cols, ld, rd uint32) int64 {
	if cols == full {
		return 1
	}
	var n int64
	for free := full &^ (cols | ld | rd); free != 0; {
		b := free & -free
		free ^= b
		n += queensSeq(full, cols|b, (ld|b)<<1&full, (rd|b)>>1)
	}
	return n
}

// queensWant are the solution counts of the n-queens problem.
var queensWant = map[int32]int64{8: 92, 9: 352, 10: 724, 11: 2680, 12: 14200, 13: 73712, 14: 365596}

// product is one block product of the recursive matrix product: two s×s
// blocks, row-major; leaf is the size multiplied sequentially.
type product struct {
	S, Leaf int
	A, B    []float64
}

func appendFloats(b []byte, v []float64) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

func floats(b []byte, n int) ([]float64, []byte, error) {
	if n < 0 || len(b) < 8*n {
		return nil, nil, errors.New("short matrix block")
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v, b[8*n:], nil
}

var productCodec = athread.CodecFuncs(func(b []byte, p product) ([]byte, error) {
	b = binary.LittleEndian.AppendUint32(b, uint32(p.S))
	b = binary.LittleEndian.AppendUint32(b, uint32(p.Leaf))
	return appendFloats(appendFloats(b, p.A), p.B), nil
}, func(b []byte) (product, error) {
	if len(b) < 8 {
		return product{}, errors.New("short matrix product")
	}
	p := product{S: int(binary.LittleEndian.Uint32(b)), Leaf: int(binary.LittleEndian.Uint32(b[4:]))}
	if p.S < 1 || p.S > 1<<12 || p.Leaf < 1 {
		return product{}, fmt.Errorf("bad block size %d", p.S)
	}
	var err error
	rest := b[8:]
	if p.A, rest, err = floats(rest, p.S*p.S); err != nil {
		return product{}, err
	}
	if p.B, rest, err = floats(rest, p.S*p.S); err != nil {
		return product{}, err
	}
	if len(rest) != 0 {
		return product{}, errors.New("trailing bytes after a matrix product")
	}
	return p, nil
})

var blockCodec = athread.CodecFuncs(func(b []byte, v []float64) ([]byte, error) {
	return appendFloats(b, v), nil
}, func(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, errors.New("ragged matrix block")
	}
	v, _, err := floats(b, len(b)/8)
	return v, err
})

var productFunc *athread.Func[product, []float64]

// quadrant copies quadrant (i, j) of an s×s matrix.
func quadrant(m []float64, s, i, j int) []float64 {
	h := s / 2
	q := make([]float64, h*h)
	for r := range h {
		copy(q[r*h:(r+1)*h], m[(i*h+r)*s+j*h:(i*h+r)*s+j*h+h])
	}
	return q
}

func productBody(ctx context.Context, p product) ([]float64, error) {
	s := p.S
	if s <= p.Leaf || s%2 != 0 {
		return multiply(p.A, p.B, s), nil
	}
	h := s / 2
	var hs [2][2][2]*athread.Handle[[]float64]
	for i := range 2 {
		for j := range 2 {
			for k := range 2 {
				hs[i][j][k] = athread.Create(ctx, productFunc, product{h, p.Leaf, quadrant(p.A, s, i, k), quadrant(p.B, s, k, j)},
					athread.Attr{Cost: int64(h) * int64(h) * int64(h)}) // multiply-adds
			}
		}
	}
	c := make([]float64, s*s)
	for i := range 2 {
		for j := range 2 {
			for k := range 2 {
				q, err := hs[i][j][k].Join(ctx)
				if err != nil {
					return nil, err
				}
				if len(q) != h*h {
					return nil, fmt.Errorf("block of %d values, want %d", len(q), h*h)
				}
				for r := range h {
					row := c[(i*h+r)*s+j*h : (i*h+r)*s+j*h+h]
					for x := range row {
						row[x] += q[r*h+x]
					}
				}
			}
		}
	}
	return c, nil
}

func multiply(a, b []float64, s int) []float64 {
	c := make([]float64, s*s)
	for i := range s {
		for k := range s {
			x := a[i*s+k]
			row := b[k*s : k*s+s]
			out := c[i*s : i*s+s]
			for j, y := range row {
				out[j] += x * y
			}
		}
	}
	return c
}

// testMatrix is a deterministic matrix of small integers, so that products
// are exact in float64.
func testMatrix(s int, seed int) []float64 {
	m := make([]float64, s*s)
	for i := range m {
		m[i] = float64((i*7+seed*13)%11) - 5
	}
	return m
}

// rates measure, for the case studies whose threads carry a cost hint,
// how many units of the hint one CPU gets through in a second: fibSeq's
// calls, the multiply-adds of the matrix product (the quickest of three
// timings).
var rates = map[string]func() float64{
	"fib": func() float64 {
		const n = 24
		return float64(fibCalls(n)) / quickest(func() {
			if fibSeq(n) != fibWant(n) {
				panic("fibSeq disagrees with fibWant")
			}
		}).Seconds()
	},
	"matmul": func() float64 {
		const s = 64
		a, b := testMatrix(s, 1), testMatrix(s, 2)
		return s * s * s / quickest(func() { multiply(a, b, s) }).Seconds()
	},
}

// quickest is the shortest of three timings of f.
func quickest(f func()) time.Duration {
	best := time.Duration(math.MaxInt64)
	for range 3 {
		t := time.Now()
		f()
		best = min(best, max(time.Since(t), time.Nanosecond))
	}
	return best
}

// app is one case study run from process 0: it returns a description of
// the result after checking it.
type app func(ctx context.Context, size, cutoff int) (string, error)

var apps = map[string]app{
	"fib": func(ctx context.Context, n, cutoff int) (string, error) {
		v, err := athread.Create(ctx, fibFunc, fibArgs{int64(n), int64(cutoff)}).Join(ctx)
		if err != nil {
			return "", err
		}
		if want := fibWant(int64(n)); v != want {
			return "", fmt.Errorf("fib(%d) = %d, want %d", n, v, want)
		}
		return fmt.Sprintf("fib(%d) = %d", n, v), nil
	},
	"nqueens":      queensApp(true),
	"nqueens-flat": queensApp(false),
	"matmul": func(ctx context.Context, n, leaf int) (string, error) {
		a, b := testMatrix(n, 1), testMatrix(n, 2)
		c, err := athread.Create(ctx, productFunc, product{n, leaf, a, b}).Join(ctx)
		if err != nil {
			return "", err
		}
		want := multiply(a, b, n)
		for i := range want {
			if c[i] != want[i] {
				return "", fmt.Errorf("matmul %d: C[%d] = %v, want %v", n, i, c[i], want[i])
			}
		}
		return fmt.Sprintf("matmul %dx%d checked", n, n), nil
	},
}

// queensApp counts the solutions of the n-queens problem, the rows before
// cutoff in parallel, split in halves or one thread per column (queens).
func queensApp(split bool) app {
	return func(ctx context.Context, n, cutoff int) (string, error) {
		want, ok := queensWant[int32(n)]
		if !ok {
			return "", fmt.Errorf("no known count for %d queens", n)
		}
		v, err := athread.Create(ctx, queensFunc, queens{N: int32(n), Cutoff: int32(cutoff), Split: split}).Join(ctx)
		if err != nil {
			return "", err
		}
		if v != want {
			return "", fmt.Errorf("%d queens: %d solutions, want %d", n, v, want)
		}
		return fmt.Sprintf("%d queens: %d solutions", n, v), nil
	}
}
