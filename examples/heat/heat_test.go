package main

import (
	"math"
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
	n, lo, hi, got, err := decodeRows(encodeRows(8, 4, 6, append(rows, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))
	if err != nil || n != 8 || lo != 4 || hi != 6 || got[15] != 16 {
		t.Fatalf("%d %d %d %v %v", n, lo, hi, got, err)
	}
	bad := encodeRows(3, 1, 3, rows)
	if _, _, _, _, err := decodeRows(bad[:len(bad)-8]); err == nil {
		t.Fatal("truncated block accepted")
	}
	if _, _, _, _, err := decodeRows(encodeRows(3, 5, 4, nil)); err == nil {
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
	for _, name := range regionNames {
		form := regionForms[name]
		coef := []float64{1e-3, 1e-9, 1e-4}[:len(form)]
		set.Put(name, &perfmodel.Model{Form: form, Coef: coef})
	}
	pg, err := program(set, 10)
	if err != nil {
		t.Fatal(err)
	}
	n, p := 100.0, 3.0
	x := n * 50
	lin := func(v float64) float64 { return 1e-3 + 1e-9*v }
	want := 2*(1e-3+1e-9*n*n+1e-4*p) + lin(x) + 10*(1e-3+1e-9*x+1e-4*p) + lin(x)
	if got := pg.Predict(n, p).T; math.Abs(got-want) > 1e-12 {
		t.Fatalf("program %v, want %v", got, want)
	}
}
