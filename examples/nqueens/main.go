// Command nqueens counts the ways to place n queens on an n×n board, one
// athread per partial board down to a cut-off depth.
//
//	go run ./examples/nqueens -n 11
//	pcorrun -n 4 nqueens -n 12
//
// The count is checked against the known values (OEIS A000170).
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/examples/internal/athreadmain"
)

// known[n] is the number of solutions for n queens.
var known = []int64{1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184}

// board is a partial placement: the columns and diagonals taken by the
// queens of the first Row rows.
type board struct {
	N, Row, Cutoff     int32
	Cols, Diag1, Diag2 uint32
}

var queens *athread.Func[board, int64]

func init() {
	queens = athread.Register("queens", solve, athread.Fixed[board](), athread.Fixed[int64]())
}

// solve counts the completions of b, creating a thread per next queen
// while b.Row is above the cut-off.
func solve(ctx context.Context, b board) (int64, error) {
	if b.Row >= b.Cutoff {
		return count(b.N, b.Row, b.Cols, b.Diag1, b.Diag2), nil
	}
	full := uint32(1)<<b.N - 1
	free := full &^ (b.Cols | b.Diag1 | b.Diag2)
	var hs []*athread.Handle[int64]
	for free != 0 {
		bit := free & -free
		free &^= bit
		hs = append(hs, athread.Create(ctx, queens, board{N: b.N, Row: b.Row + 1, Cutoff: b.Cutoff,
			Cols: b.Cols | bit, Diag1: (b.Diag1 | bit) << 1 & full, Diag2: (b.Diag2 | bit) >> 1}))
	}
	var total int64
	for _, h := range hs {
		v, err := h.Join(ctx)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

// count is the sequential search.
func count(n, row int32, cols, d1, d2 uint32) int64 {
	if row == n {
		return 1
	}
	full := uint32(1)<<n - 1
	free := full &^ (cols | d1 | d2)
	var total int64
	for free != 0 {
		bit := free & -free
		free &^= bit
		total += count(n, row+1, cols|bit, (d1|bit)<<1&full, (d2|bit)>>1)
	}
	return total
}

func main() {
	n := flag.Int("n", 11, "board size (1..15)")
	cutoff := flag.Int("cutoff", 4, "rows placed by threads; the rest is searched sequentially")
	athreadmain.Main("nqueens", func(ctx context.Context, rt *athread.Runtime) error {
		if *n < 1 || *n >= len(known) {
			return fmt.Errorf("n must be in 1..%d", len(known)-1)
		}
		start := time.Now()
		v, err := athread.Create(ctx, queens, board{N: int32(*n), Cutoff: int32(*cutoff)}).Join(ctx)
		if err != nil {
			return err
		}
		if v != known[*n] {
			return fmt.Errorf("%d queens: %d solutions, want %d", *n, v, known[*n])
		}
		fmt.Printf("%d queens: %d solutions in %v (cut-off %d, %d VPs per process)\n", *n, v, time.Since(start).Round(time.Microsecond), *cutoff, rt.VPs())
		return nil
	})
}
