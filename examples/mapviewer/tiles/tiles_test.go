package tiles

import (
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestDownscaleMeans(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 5, 3))
	for y := 0; y < 3; y++ {
		for x := 0; x < 5; x++ {
			src.SetRGBA(x, y, color.RGBA{uint8(10 * (x + 5*y)), uint8(x), 200, 255})
		}
	}
	got := Downscale(src, 2)
	if got.Rect.Dx() != 3 || got.Rect.Dy() != 2 {
		t.Fatalf("size %v, want 3x2", got.Rect)
	}
	// Block (0,0): pixels 0,10,50,60 -> mean 30; (2,1): pixel (4,2) alone -> 140.
	if r := got.RGBAAt(0, 0).R; r != 30 {
		t.Errorf("block (0,0) red %d, want 30", r)
	}
	if r := got.RGBAAt(2, 1).R; r != 140 {
		t.Errorf("partial block (2,1) red %d, want 140", r)
	}
	// Rounding: green of block (0,0) is mean(0,1,0,1) = 0.5 -> 1.
	if g := got.RGBAAt(0, 0).G; g != 1 {
		t.Errorf("block (0,0) green %d, want 1 (rounded)", g)
	}
	if one := Downscale(src, 1); one.RGBAAt(3, 2) != src.RGBAAt(3, 2) {
		t.Errorf("1:1 changed a pixel")
	}
}

func TestHoldersSpreadAndReplicas(t *testing.T) {
	s := Set{Cols: 15, Rows: 20, TileW: 640, TileH: 480, Nodes: 4, Replicas: 2}
	count := make([]int, 4)
	for _, id := range s.All() {
		h := s.Holders(id)
		if len(h) != 2 || h[0] == h[1] {
			t.Fatalf("%v holders %v, want 2 distinct", id, h)
		}
		count[h[0]]++
	}
	for k, c := range count {
		if c < 40 || c > 110 {
			t.Errorf("node %d is primary for %d of 300 tiles: hash spreads badly %v", k, c, count)
		}
	}
}

func TestScales(t *testing.T) {
	s := Set{TileW: 640, TileH: 480}
	got := s.Scales()
	want := []int{1, 2, 4, 5, 8, 10, 16, 20, 32, 40, 80, 160}
	if len(got) != len(want) {
		t.Fatalf("scales %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("scales %v, want %v", got, want)
		}
	}
	if s.ValidScale(3) || !s.ValidScale(16) || s.ValidScale(0) {
		t.Errorf("ValidScale wrong")
	}
}

func small(t *testing.T, nodes, replicas int) Set {
	t.Helper()
	o := DefaultGenOptions(t.TempDir())
	o.Cols, o.Rows, o.TileW, o.TileH, o.Nodes, o.Replicas = 3, 2, 80, 60, nodes, replicas
	s, err := Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGenerateLoadAndErrors(t *testing.T) {
	s := small(t, 3, 2)
	re, err := Open(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if re.Cols != 3 || re.Rows != 2 || re.Nodes != 3 || re.Source != "procedural" {
		t.Fatalf("manifest %+v", re)
	}
	id := ID{2, 1}
	h := s.Holders(id)
	a, err := s.LoadScaled(id, h[0], 4)
	if err != nil {
		t.Fatal(err)
	}
	if a.Rect.Dx() != 20 || a.Rect.Dy() != 15 {
		t.Fatalf("1:4 fragment %v, want 20x15", a.Rect)
	}
	b, err := s.LoadScaled(id, h[1], 4)
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Pix) != string(b.Pix) {
		t.Errorf("replicas differ")
	}
	// Not every pixel the same colour: the map is drawn.
	if a.RGBAAt(0, 0) == a.RGBAAt(10, 7) && a.RGBAAt(0, 0) == a.RGBAAt(19, 14) {
		t.Errorf("fragment looks blank")
	}

	if _, err := s.LoadScaled(id, h[0], 3); !errors.Is(err, ErrScale) {
		t.Errorf("scale 3: %v, want ErrScale", err)
	}
	os.Remove(s.Path(id, h[0]))
	_, err = s.LoadScaled(id, h[0], 1)
	var te *TileError
	if !errors.Is(err, ErrMissing) || !errors.As(err, &te) || te.Tile != id || te.Path != s.Path(id, h[0]) {
		t.Errorf("missing tile: %v", err)
	}
	os.WriteFile(s.Path(id, h[1]), []byte("\xff\xd8 not a jpeg"), 0o644)
	if _, err := s.LoadScaled(id, h[1], 1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("corrupt tile: %v, want ErrCorrupt", err)
	}
}

func TestOpenRejectsBadManifest(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil {
		t.Errorf("no manifest: no error")
	}
	os.WriteFile(filepath.Join(dir, Manifest), []byte(`{"cols":-1,"rows":2,"tile_w":8,"tile_h":8,"nodes":1,"replicas":1}`), 0o644)
	if _, err := Open(dir); !errors.Is(err, ErrBadSet) {
		t.Errorf("negative grid: %v, want ErrBadSet", err)
	}
	os.WriteFile(filepath.Join(dir, Manifest), []byte(`{"cols":`), 0o644)
	if _, err := Open(dir); !errors.Is(err, ErrBadSet) {
		t.Errorf("truncated manifest: %v, want ErrBadSet", err)
	}
}

func TestGenerateFromSource(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 4, 2))
	for x := 0; x < 4; x++ {
		for y := 0; y < 2; y++ {
			src.SetRGBA(x, y, color.RGBA{uint8(60 * x), 0, uint8(200 * y), 255})
		}
	}
	path := filepath.Join(t.TempDir(), "src.png")
	f, _ := os.Create(path)
	png.Encode(f, src)
	f.Close()
	o := DefaultGenOptions(t.TempDir())
	o.Cols, o.Rows, o.TileW, o.TileH, o.Source, o.Quality, o.Upscale = 2, 0, 64, 32, path, 95, true
	s, err := Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// Top-left tile is dark red-free and blue-free; bottom-right is red and blue.
	tl, err := s.LoadScaled(ID{0, 0}, 0, 32)
	if err != nil {
		t.Fatal(err)
	}
	br, err := s.LoadScaled(ID{1, 1}, 0, 32)
	if err != nil {
		t.Fatal(err)
	}
	if c := tl.RGBAAt(0, 0); c.R > 60 || c.B > 60 {
		t.Errorf("top-left mean %v, want dark", c)
	}
	if c := br.RGBAAt(0, 0); c.R < 100 || c.B < 140 {
		t.Errorf("bottom-right mean %v, want red and blue", c)
	}
	o.Source = filepath.Join(t.TempDir(), "none.png")
	if _, err := Generate(context.Background(), o); err == nil {
		t.Errorf("missing source: no error")
	}
}

func TestRelayout(t *testing.T) {
	s := small(t, 1, 1)
	r, err := Relayout(s, t.TempDir(), 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range r.All() {
		a, err := r.LoadScaled(id, r.Holders(id)[0], 2)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.LoadScaled(id, 0, 2)
		if string(a.Pix) != string(b.Pix) {
			t.Fatalf("%v differs after relayout", id)
		}
	}
}

func BenchmarkLoadScaled16(b *testing.B) {
	o := DefaultGenOptions(b.TempDir())
	o.Cols, o.Rows = 1, 1
	s, err := Generate(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.LoadScaled(ID{0, 0}, 0, 16); err != nil {
			b.Fatal(err)
		}
	}
}
