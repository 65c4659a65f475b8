package sim

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// A DAG is a fork/join task tree: each task runs Pre units of work, forks
// its children (all at once), waits for them, then runs Post units. A
// task's depth is its distance from the root (depth 0). Arg bytes travel
// with a task that is stolen; Res bytes travel back to its parent's
// process when it ends elsewhere.
type DAG struct {
	Name string

	pre, post []int32
	depth     []int32
	parent    []int32 // -1 for the root
	first     []int32 // first child, -1 if none
	next      []int32 // next sibling, -1 if none
	last      []int32 // last child while building
	nkids     []int32
	arg, res  []int32
}

// maxNodes bounds the tasks of one DAG.
const maxNodes = 1 << 26

// add appends a task and returns its index.
func (d *DAG) add(parent int32, pre, post, arg, res int32) int32 {
	n := int32(len(d.pre))
	dep := int32(0)
	if parent >= 0 {
		dep = d.depth[parent] + 1
		if d.first[parent] < 0 {
			d.first[parent] = n
		} else {
			d.next[d.last[parent]] = n
		}
		d.last[parent] = n
		d.nkids[parent]++
	}
	d.pre = append(d.pre, pre)
	d.post = append(d.post, post)
	d.depth = append(d.depth, dep)
	d.parent = append(d.parent, parent)
	d.first = append(d.first, -1)
	d.next = append(d.next, -1)
	d.last = append(d.last, -1)
	d.nkids = append(d.nkids, 0)
	d.arg = append(d.arg, arg)
	d.res = append(d.res, res)
	return n
}

// Len is the number of tasks.
func (d *DAG) Len() int { return len(d.pre) }

// Fanout is the growth of the top of the tree: the k-th root of the
// number of tasks at depth k, for the first depth holding 128 tasks or
// more (or the deepest), rounded, at least 2. It is what
// hws.DepthLimitFor needs.
func (d *DAG) Fanout() int {
	var per []int
	for _, dep := range d.depth {
		for int(dep) >= len(per) {
			per = append(per, 0)
		}
		per[dep]++
	}
	k := len(per) - 1
	for i, n := range per {
		if n >= 128 {
			k = i
			break
		}
	}
	if k < 1 {
		return 2
	}
	return max(2, int(math.Round(math.Pow(float64(per[k]), 1/float64(k)))))
}

// Work is W, the total work in units.
func (d *DAG) Work() int64 {
	var w int64
	for i := range d.pre {
		w += int64(d.pre[i]) + int64(d.post[i])
	}
	return w
}

// subtree returns each task's subtree work and span (critical path), in
// units. Children always come after their parent, so one backward pass
// suffices.
func (d *DAG) subtree() (work, span []int64) {
	work = make([]int64, d.Len())
	span = make([]int64, d.Len())
	for n := d.Len() - 1; n >= 0; n-- {
		var w, s int64
		for c := d.first[n]; c >= 0; c = d.next[c] {
			w += work[c]
			s = max(s, span[c])
		}
		work[n] = w + int64(d.pre[n]) + int64(d.post[n])
		span[n] = s + int64(d.pre[n]) + int64(d.post[n])
	}
	return work, span
}

// Span is D, the critical path in units.
func (d *DAG) Span() int64 {
	_, s := d.subtree()
	return s[0]
}

// SpanSteps is the critical path counted in steps of step units of work,
// each task costing at least one step: the measure of D in Théorème 1,
// whose analysis lets one steal happen per step, so that every level of the
// task tree takes at least one.
func (d *DAG) SpanSteps(step float64) float64 {
	span := make([]float64, d.Len())
	for n := d.Len() - 1; n >= 0; n-- {
		var s float64
		for c := d.first[n]; c >= 0; c = d.next[c] {
			s = max(s, span[c])
		}
		span[n] = s + max(1, float64(int64(d.pre[n])+int64(d.post[n]))/step)
	}
	return span[0]
}

// Blocks returns the number of blocks below depth limit (the subtrees
// rooted at depth limit; the whole tree when limit is 0) and the largest
// block's work, in units.
func (d *DAG) Blocks(limit int) (n int, maxWork int64) {
	w, _ := d.subtree()
	for i := range d.depth {
		if int(d.depth[i]) == limit {
			n++
			maxWork = max(maxWork, w[i])
		}
	}
	return n, maxWork
}

// WorkAbove is W_u for a depth limit: the work of the tasks created above
// it (depth < limit), which under hws only the masters run.
func (d *DAG) WorkAbove(limit int) int64 {
	var w int64
	for i := range d.depth {
		if int(d.depth[i]) < limit {
			w += int64(d.pre[i]) + int64(d.post[i])
		}
	}
	return w
}

// BestLimit is the hws depth limit for g groups of pg processes that
// minimises the two terms of Théorème 1's makespan the limit trades
// against each other: W_u/g, the work above the limit, which only the g
// masters run, and max_i W_i/p_g, the largest block run by one group
// (both in units; the shallower limit on a tie). A limit too deep puts
// whole leaves above it (the masters run them while their groups wait); one
// too shallow leaves blocks too large for one group. It is 0 for a single
// group.
func (d *DAG) BestLimit(g, pg int) int {
	if g <= 1 || d.Len() == 0 {
		return 0
	}
	work, _ := d.subtree()
	deepest := 0
	for _, dp := range d.depth {
		deepest = max(deepest, int(dp))
	}
	own := make([]int64, deepest+1)   // work of the tasks at each depth
	block := make([]int64, deepest+1) // largest subtree rooted at each depth
	for i, dp := range d.depth {
		own[dp] += int64(d.pre[i]) + int64(d.post[i])
		block[dp] = max(block[dp], work[i])
	}
	best, bestCost := 1, -1.0
	var above int64
	for l := 1; l <= deepest; l++ {
		above += own[l-1]
		cost := float64(above)/float64(g) + float64(block[l])/float64(pg)
		if bestCost < 0 || cost < bestCost {
			best, bestCost = l, cost
		}
	}
	return best
}

func newDAG(name string) *DAG { return &DAG{Name: name} }

func (d *DAG) check() (*DAG, error) {
	if d.Len() > maxNodes {
		return nil, fmt.Errorf("sim: %s has more than %d tasks", d.Name, maxNodes)
	}
	return d, nil
}

// fibCalls is the number of calls the naive recursive fib(k) makes.
func fibCalls(k int) int64 {
	a, b := int64(1), int64(1) // calls(0), calls(1)
	for range k {
		a, b = b, a+b+1
	}
	return a
}

// Fib is the task tree of the recursive Fibonacci fib(n): fib(k) forks
// fib(k-1) and fib(k-2), one unit of work before and one after; below
// cutoff a task computes sequentially, one unit per call.
func Fib(n, cutoff int) (*DAG, error) {
	if n < 0 || n > 60 || cutoff < 2 {
		return nil, fmt.Errorf("sim: fib(%d) with cutoff %d: want 0 <= n <= 60, cutoff >= 2", n, cutoff)
	}
	if fibCalls(n)/fibCalls(min(n, cutoff)) > maxNodes {
		return nil, fmt.Errorf("sim: fib(%d) with cutoff %d has too many tasks", n, cutoff)
	}
	d := newDAG(fmt.Sprintf("fib(%d)", n))
	var rec func(parent int32, k int)
	rec = func(parent int32, k int) {
		if k < cutoff {
			d.add(parent, int32(min(fibCalls(k), 1<<30)), 0, 16, 16)
			return
		}
		t := d.add(parent, 1, 1, 16, 16)
		rec(t, k-1)
		rec(t, k-2)
	}
	rec(-1, n)
	return d.check()
}

// Balanced is a complete tree of the given branching and depth: inner
// tasks do one unit before and after forking, leaves do leaf units.
func Balanced(branch, depth int, leaf int32) (*DAG, error) {
	nodes := 1
	for range depth {
		if nodes *= branch; nodes > maxNodes {
			return nil, fmt.Errorf("sim: tree %d^%d is too large", branch, depth)
		}
	}
	if branch < 1 || depth < 0 || leaf < 1 {
		return nil, fmt.Errorf("sim: bad balanced tree %d^%d, leaf %d", branch, depth, leaf)
	}
	d := newDAG(fmt.Sprintf("tree(%d^%d)", branch, depth))
	var rec func(parent int32, level int)
	rec = func(parent int32, level int) {
		if level == depth {
			d.add(parent, leaf, 0, 64, 16)
			return
		}
		t := d.add(parent, 1, 1, 64, 16)
		for range branch {
			rec(t, level+1)
		}
	}
	rec(-1, 0)
	return d.check()
}

// Unbalanced is a binary tree whose work is split unevenly: a task of
// work w above grain splits it into two children of w·f and w·(1-f), f
// drawn uniformly in [0.1, 0.9] (deterministic with seed); at or below
// grain it is a leaf of w units.
func Unbalanced(work, grain int64, seed uint64) (*DAG, error) {
	if grain < 1 || work < grain || work/grain > maxNodes/4 {
		return nil, fmt.Errorf("sim: unbalanced tree of work %d, grain %d", work, grain)
	}
	r := rand.New(rand.NewPCG(seed, 0x756e62))
	d := newDAG(fmt.Sprintf("unbalanced(%d)", work))
	var rec func(parent int32, w int64)
	rec = func(parent int32, w int64) {
		if w <= grain {
			d.add(parent, int32(w), 0, 64, 16)
			return
		}
		t := d.add(parent, 1, 1, 64, 16)
		f := 0.1 + 0.8*r.Float64()
		a := max(1, int64(float64(w)*f))
		rec(t, a)
		rec(t, max(1, w-a))
	}
	rec(-1, work)
	return d.check()
}

// NQueens is the search tree of the n-queens problem: a task places a
// queen on its row and forks one child per safe column of the next row;
// from row cutoff on, a task searches its subtree sequentially, one unit
// per placement tried (the exact count, found by searching).
func NQueens(n, cutoff int) (*DAG, error) {
	if n < 1 || n > 16 || cutoff < 1 || cutoff > n {
		return nil, fmt.Errorf("sim: %d-queens with cutoff %d", n, cutoff)
	}
	d := newDAG(fmt.Sprintf("nqueens(%d)", n))
	full := uint32(1)<<n - 1
	var rec func(parent int32, row int, cols, ld, rd uint32)
	rec = func(parent int32, row int, cols, ld, rd uint32) {
		if row >= cutoff {
			d.add(parent, int32(min(queensPlacements(full, cols, ld, rd), 1<<30)), 0, 32, 16)
			return
		}
		t := d.add(parent, 1, 1, 32, 16)
		free := full &^ (cols | ld | rd)
		for free != 0 {
			b := free & -free
			free ^= b
			rec(t, row+1, cols|b, (ld|b)<<1&full, (rd|b)>>1)
		}
	}
	rec(-1, 0, 0, 0, 0)
	return d.check()
}

// queensPlacements counts the placements a sequential n-queens search
// tries below a board state (columns, left and right diagonals taken, as
// bit sets within full), the state's own included.
func queensPlacements(full, cols, ld, rd uint32) int64 {
	var c int64 = 1
	free := full &^ (cols | ld | rd)
	for free != 0 {
		b := free & -free
		free ^= b
		c += queensPlacements(full, cols|b, (ld|b)<<1&full, (rd|b)>>1)
	}
	return c
}

// NQueensSplit is the n-queens search as a divide-and-conquer loop: a task
// holding several candidate columns for its row forks two tasks, one per
// half of them; a task holding one places that queen and goes on in the
// same way with the free columns of the next row; from row cutoff on, a
// task searches its subtree sequentially, as in NQueens.
func NQueensSplit(n, cutoff int) (*DAG, error) {
	if n < 1 || n > 16 || cutoff < 1 || cutoff > n {
		return nil, fmt.Errorf("sim: %d-queens with cutoff %d", n, cutoff)
	}
	d := newDAG(fmt.Sprintf("nqueens-split(%d)", n))
	full := uint32(1)<<n - 1
	// task adds the task that holds candidates cand of row row (all the
	// free ones if !given).
	var task func(parent int32, row int, cols, ld, rd, cand uint32, given bool)
	task = func(parent int32, row int, cols, ld, rd, cand uint32, given bool) {
		for {
			if !given {
				if row >= cutoff {
					d.add(parent, int32(min(queensPlacements(full, cols, ld, rd), 1<<30)), 0, 32, 16)
					return
				}
				cand, given = full&^(cols|ld|rd), true
			}
			k := bits.OnesCount32(cand)
			if k == 0 {
				d.add(parent, 1, 0, 32, 16)
				return
			}
			if k > 1 {
				lo, c := uint32(0), cand
				for range k / 2 {
					b := c & -c
					lo |= b
					c ^= b
				}
				t := d.add(parent, 1, 1, 32, 16)
				task(t, row, cols, ld, rd, lo, true)
				task(t, row, cols, ld, rd, cand&^lo, true)
				return
			}
			b := cand
			row, cols, ld, rd, given = row+1, cols|b, (ld|b)<<1&full, (rd|b)>>1, false
		}
	}
	task(-1, 0, 0, 0, 0, 0, false)
	return d.check()
}

// MatMul is a blocked matrix product C = A·B of n×n float64 matrices cut
// recursively into quadrants: a task of size s forks the eight products of
// size s/2 and adds their results (s² units), down to blocks of leaf
// size, which multiply (leaf³ units). A stolen task carries its two input
// blocks and returns its product block.
func MatMul(n, leaf int) (*DAG, error) {
	if leaf < 1 || n < leaf || n/leaf > 1<<8 || n&(n-1) != 0 || leaf&(leaf-1) != 0 {
		return nil, fmt.Errorf("sim: matmul %d with leaf %d: want powers of two, n/leaf <= 256", n, leaf)
	}
	d := newDAG(fmt.Sprintf("matmul(%d)", n))
	var rec func(parent int32, s int)
	rec = func(parent int32, s int) {
		blk := int32(min(s*s*8, 1<<30))
		if s <= leaf {
			d.add(parent, int32(min(s*s*s, 1<<30)), 0, 2*blk, blk)
			return
		}
		t := d.add(parent, 1, int32(min(s*s, 1<<30)), 2*blk, blk)
		for range 8 {
			rec(t, s/2)
		}
	}
	rec(-1, n)
	return d.check()
}
