// Command fib computes Fibonacci numbers with one athread per call above a
// cut-off, the classic fine-grained fork/join benchmark.
//
//	go run ./examples/fib -n 30 -cutoff 12
//	pcorrun -n 4 fib -n 32 -cutoff 14
//
// Below the cut-off the recursion runs sequentially inside the thread.
// The result is checked against the closed form.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/examples/internal/athreadmain"
)

// args is a call's input: n and the cut-off below which it runs
// sequentially.
type args struct {
	N, Cutoff int64
}

var fib *athread.Func[args, int64]

func init() {
	fib = athread.Register("fib", fibBody, athread.Fixed[args](), athread.Fixed[int64]())
}

func fibBody(ctx context.Context, a args) (int64, error) {
	if a.N <= a.Cutoff || a.N < 2 {
		return fibSeq(a.N), nil
	}
	x := athread.Create(ctx, fib, args{a.N - 1, a.Cutoff})
	y := athread.Create(ctx, fib, args{a.N - 2, a.Cutoff})
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

// closedForm is Binet's formula, exact up to n = 70.
func closedForm(n int64) int64 {
	phi := (1 + math.Sqrt(5)) / 2
	return int64(math.Round(math.Pow(phi, float64(n)) / math.Sqrt(5)))
}

func main() {
	n := flag.Int64("n", 27, "which Fibonacci number")
	cutoff := flag.Int64("cutoff", 0, "compute sequentially at or below this n (0: a thread per call)")
	athreadmain.Main("fib", func(ctx context.Context, rt *athread.Runtime) error {
		start := time.Now()
		v, err := athread.Create(ctx, fib, args{*n, *cutoff}).Join(ctx)
		if err != nil {
			return err
		}
		if want := closedForm(*n); v != want {
			return fmt.Errorf("fib(%d) = %d, want %d", *n, v, want)
		}
		fmt.Printf("fib(%d) = %d in %v (cut-off %d, %d VPs per process)\n", *n, v, time.Since(start).Round(time.Microsecond), *cutoff, rt.VPs())
		return nil
	})
}
