// Command tree is the synthetic recursive program of Anahy's Figure 4: each
// thread that has not reached the last level derives two inputs, creates
// a thread for each, does some work of its own, joins both and combines
// their results, so that the threads form a binary tree and every thread
// does the same amount of work.
//
//	go run ./examples/tree -levels 5 -dot tree.dot -trace tree.json
//	pcorrun -n 4 tree -levels 14
//
// tree.dot is the task graph (the paper's Figure 5: dot -Tsvg tree.dot);
// tree.json is the execution trace (Figure 6) for Perfetto. The result is
// checked against a sequential run.
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/examples/internal/athreadmain"
)

// arg is a thread's input.
type arg struct {
	Level, Levels int32
	Work          int32 // rounds of doSomething
	Value         uint64
}

var tree *athread.Func[arg, uint64]

func init() {
	tree = athread.Register("tree", treeBody, athread.Fixed[arg](), athread.Fixed[uint64]())
}

func notFinish(a arg) bool { return a.Level < a.Levels }
func foo(a arg) arg        { return arg{a.Level + 1, a.Levels, a.Work, a.Value*6364136223846793005 + 1} }
func bar(a arg) arg        { return arg{a.Level + 1, a.Levels, a.Work, a.Value*6364136223846793005 + 3} }

// doSomething is the work each thread does: rounds of a mixing function.
func doSomething(x, y uint64, rounds int32) uint64 {
	h := x ^ y<<1
	for i := int32(0); i < rounds; i++ {
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 29
	}
	return h
}

func treeBody(ctx context.Context, a arg) (uint64, error) {
	if !notFinish(a) {
		return doSomething(a.Value, 0, a.Work), nil
	}
	a0, a1 := foo(a), bar(a)
	thr0 := athread.Create(ctx, tree, a0)
	thr1 := athread.Create(ctx, tree, a1)
	res := doSomething(a0.Value, a1.Value, a.Work)
	aux0, err := thr0.Join(ctx)
	if err != nil {
		return 0, err
	}
	aux1, err := thr1.Join(ctx)
	if err != nil {
		return 0, err
	}
	return res + doSomething(aux0, aux1, a.Work), nil
}

// treeSeq is the same computation without threads.
func treeSeq(a arg) uint64 {
	if !notFinish(a) {
		return doSomething(a.Value, 0, a.Work)
	}
	a0, a1 := foo(a), bar(a)
	res := doSomething(a0.Value, a1.Value, a.Work)
	return res + doSomething(treeSeq(a0), treeSeq(a1), a.Work)
}

func main() {
	levels := flag.Int("levels", 10, "levels of the tree (2^levels leaves)")
	work := flag.Int("work", 20000, "rounds of work per thread")
	athreadmain.Main("tree", func(ctx context.Context, rt *athread.Runtime) error {
		root := arg{Levels: int32(*levels), Work: int32(*work), Value: 1}
		t0 := time.Now()
		want := treeSeq(root)
		seq := time.Since(t0)
		t0 = time.Now()
		got, err := athread.Create(ctx, tree, root).Join(ctx)
		if err != nil {
			return err
		}
		par := time.Since(t0)
		if got != want {
			return fmt.Errorf("tree: %#x, sequential %#x", got, want)
		}
		fmt.Printf("tree of %d levels: %#x in %v (sequential %v, speedup %.2fx)\n", *levels, got,
			par.Round(time.Microsecond), seq.Round(time.Microsecond), seq.Seconds()/par.Seconds())
		return nil
	})
}
