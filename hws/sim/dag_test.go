package sim

import "testing"

func TestDAGFigures(t *testing.T) {
	b, err := Balanced(2, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	// 3 inner tasks of 1+1 units, 4 leaves of 5; the path root, child,
	// leaf costs 1+1+5+1+1.
	if b.Len() != 7 || b.Work() != 26 || b.Span() != 9 {
		t.Fatalf("tree 2^2: %d tasks, W=%d, D=%d", b.Len(), b.Work(), b.Span())
	}
	if n, m := b.Blocks(1); n != 2 || m != 12 {
		t.Fatalf("blocks at depth 1: %d, largest %d", n, m)
	}
	if n, m := b.Blocks(0); n != 1 || m != 26 {
		t.Fatalf("blocks at depth 0: %d, largest %d", n, m)
	}
	// The partial placements of 8 queens: 1+8+42+140+344+568+550+312+92.
	q, err := NQueens(8, 8)
	if err != nil || q.Len() != 2057 {
		t.Fatalf("8-queens tree: %d tasks, %v", q.Len(), err)
	}
	// With a cutoff, the leaves carry the same placements as work.
	q4, err := NQueens(8, 4)
	if err != nil {
		t.Fatal(err)
	}
	inner := int64(1 + 8 + 42 + 140)
	if q4.Work() != 2*inner+(2057-inner) {
		t.Fatalf("8-queens cut at row 4: W=%d", q4.Work())
	}
	// Split in halves, the same search: the same placements reach the
	// cutoff row, every inner task forks two, and the root's halves hold
	// 4 and 4 of the 8 first-row columns.
	qs, err := NQueensSplit(8, 4)
	if err != nil || qs.Fanout() != 2 {
		t.Fatalf("8-queens split: %v, fan-out %d", err, qs.Fanout())
	}
	if leaves, want := qs.leafWork(), q4.leafWork(); leaves != want {
		t.Fatalf("8-queens split: leaves carry %d units, want %d", leaves, want)
	}
	if n, _ := qs.Blocks(1); n != 2 {
		t.Fatalf("8-queens split: %d tasks at depth 1", n)
	}
	// fib(k) below the cutoff costs its number of calls.
	f, err := Fib(10, 20)
	if err != nil || f.Len() != 1 || f.Work() != 177 {
		t.Fatalf("fib(10) sequential: %d tasks, W=%d, %v", f.Len(), f.Work(), err)
	}
	f, err = Fib(5, 2) // calls(5) = 15 tasks: 7 inner, 8 leaves of 1
	if err != nil || f.Len() != 15 || f.Work() != 22 || f.Span() != 9 {
		t.Fatalf("fib(5): %d tasks, W=%d, D=%d, %v", f.Len(), f.Work(), f.Span(), err)
	}
	if f.Fanout() != 2 || q.Fanout() < 3 || b.Fanout() != 2 {
		t.Fatalf("fan-outs %d %d %d", f.Fanout(), q.Fanout(), b.Fanout())
	}
	m, err := MatMul(4, 2)
	if err != nil || m.Len() != 9 || m.Work() != 1+16+8*8 || m.arg[1] != 2*2*2*8 || m.Fanout() != 8 {
		t.Fatalf("matmul 4/2: %d tasks, W=%d, %v", m.Len(), m.Work(), err)
	}
	u1, _ := Unbalanced(100000, 100, 3)
	u2, _ := Unbalanced(100000, 100, 3)
	if u1.Len() != u2.Len() || u1.Span() != u2.Span() || u1.Work() < 100000 {
		t.Fatalf("unbalanced tree not deterministic: %d/%d tasks", u1.Len(), u2.Len())
	}
	for _, bad := range []func() (*DAG, error){
		func() (*DAG, error) { return Fib(-1, 2) },
		func() (*DAG, error) { return Fib(60, 2) },
		func() (*DAG, error) { return Balanced(10, 10, 1) },
		func() (*DAG, error) { return NQueens(17, 3) },
		func() (*DAG, error) { return MatMul(6, 2) },
		func() (*DAG, error) { return Unbalanced(10, 0, 1) },
	} {
		if _, err := bad(); err == nil {
			t.Error("a bad DAG was accepted")
		}
	}
}

// BestLimit minimises W_u/g + max_i W_i/p_g over the depth limits, the
// shallower on a tie; W_u counts the tasks above the limit.
func TestBestLimit(t *testing.T) {
	b, _ := Balanced(2, 2, 5)
	// Limit 1: W_u = 2 (the root), largest block 12; limit 2: W_u = 6,
	// blocks of 5.
	if b.WorkAbove(1) != 2 || b.WorkAbove(2) != 6 || b.WorkAbove(0) != 0 {
		t.Fatalf("W_u %d %d", b.WorkAbove(1), b.WorkAbove(2))
	}
	if l := b.BestLimit(2, 1); l != 2 { // 1 + 12 against 3 + 5
		t.Fatalf("2 groups of 1: limit %d, want 2", l)
	}
	if l := b.BestLimit(2, 4); l != 1 { // 1 + 3 against 3 + 1.25
		t.Fatalf("2 groups of 4: limit %d, want 1", l)
	}
	if b.BestLimit(1, 8) != 0 {
		t.Fatal("a single group has a limit")
	}
	f, _ := Fib(30, 14)
	u, _ := Unbalanced(3_000_000, 2000, 1)
	m, _ := MatMul(256, 32)
	for _, d := range []*DAG{f, u, m} {
		for _, g := range []int{4, 64} {
			for _, pg := range []int{2, 16} {
				got := d.BestLimit(g, pg)
				cost := func(l int) float64 {
					_, mx := d.Blocks(l)
					return float64(d.WorkAbove(l))/float64(g) + float64(mx)/float64(pg)
				}
				for l := 1; l < 64; l++ {
					if n, _ := d.Blocks(l); n == 0 {
						break
					}
					if cost(l) < cost(got) || cost(l) == cost(got) && l < got {
						t.Fatalf("%s %dx%d: limit %d costs %.0f, %d costs %.0f", d.Name, g, pg, got, cost(got), l, cost(l))
					}
				}
			}
		}
	}
}

// leafWork is the work of the tasks that fork nothing.
func (d *DAG) leafWork() int64 {
	var w int64
	for i := range d.pre {
		if d.nkids[i] == 0 {
			w += int64(d.pre[i]) + int64(d.post[i])
		}
	}
	return w
}
