package view

import (
	"context"
	"errors"
	"image"
	"os"
	"strings"
	"testing"

	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

func paperSet() tiles.Set {
	return tiles.Set{Cols: 15, Rows: 20, TileW: 640, TileH: 480, Nodes: 1, Replicas: 1}
}

// On tiles the paper's scales do not all divide, a region is named by the
// scale it is really viewed at.
func TestPaperRegionNamesTrueScale(t *testing.T) {
	s := tiles.Set{Cols: 20, Rows: 20, TileW: 500, TileH: 500, Nodes: 1, Replicas: 1} // scales 1 2 4 5 10 20 25 ...
	want := []string{"R1 1:1", "R2 1:2", "R3 1:4", "R4 1:5", "R5 1:10", "R6 1:10", "R7 1:20"}
	for i, pr := range PaperRegions(s, Window{W: 600, H: 600}) {
		p, err := Fit(s, pr.Region, Window{W: 600, H: 600})
		if err != nil {
			t.Fatal(err)
		}
		if pr.Name != want[i] || pr.Scale != p.Scale || pr.Nominal != PaperScales[i] {
			t.Errorf("region %d: %q at 1:%d (nominal 1:%d), planned at 1:%d; want %q", i+1, pr.Name, pr.Scale, pr.Nominal, p.Scale, want[i])
		}
	}
}

func TestPaperRegions(t *testing.T) {
	s := paperSet()
	win := Window{600, 600}
	want := []int{2, 6, 20, 35, 80, 130, 300}
	for i, pr := range PaperRegions(s, win) {
		p, err := Fit(s, pr.Region, win)
		if err != nil {
			t.Fatal(err)
		}
		if p.Scale != pr.Scale || len(p.Tiles) != want[i] {
			t.Errorf("%s: scale 1:%d with %d tiles, want 1:%d with %d", pr.Name, p.Scale, len(p.Tiles), pr.Scale, want[i])
		}
		if p.Size.X > 600 || p.Size.Y > 600 {
			t.Errorf("%s: output %v larger than the window", pr.Name, p.Size)
		}
	}
}

func TestBadRequests(t *testing.T) {
	s := paperSet()
	for _, c := range []struct {
		r   Region
		win Window
	}{
		{Region{-1, 0, 10, 10}, Window{600, 600}},
		{Region{0, 0, 0, 10}, Window{600, 600}},
		{Region{9000, 0, 1000, 10}, Window{600, 600}},
		{Region{1 << 62, 1 << 62, 1 << 62, 1 << 62}, Window{600, 600}},
		{Region{0, 0, 10, 10}, Window{100000, 600}},
		{Region{0, 0, 10, 10}, Window{0, 600}},
		{Region{0, 0, 9600, 9600}, Window{10, 10}}, // needs more than 1:160
	} {
		if _, err := Fit(s, c.r, c.win); !errors.Is(err, ErrBadRequest) {
			t.Errorf("Fit(%v, %v) = %v, want ErrBadRequest", c.r, c.win, err)
		}
	}
	if _, err := At(s, Region{0, 0, 100, 100}, 3); !errors.Is(err, ErrBadRequest) {
		t.Errorf("scale 3: %v", err)
	}
	if _, err := At(s, Region{0, 0, 9600, 9600}, 1); !errors.Is(err, ErrBadRequest) {
		t.Errorf("9600x9600 output: %v", err)
	}
}

func genSet(t *testing.T) tiles.Set {
	t.Helper()
	o := tiles.DefaultGenOptions(t.TempDir())
	o.Cols, o.Rows, o.TileW, o.TileH, o.Nodes, o.Replicas = 4, 3, 80, 40, 2, 1
	s, err := tiles.Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fullMap assembles the whole map at 1:1 from the tile files.
func fullMap(t *testing.T, s tiles.Set) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, s.MapW(), s.MapH()))
	for _, id := range s.All() {
		f, err := s.LoadScaled(id, s.Holders(id)[0], 1)
		if err != nil {
			t.Fatal(err)
		}
		at := image.Pt(id.Col*s.TileW, id.Row*s.TileH)
		blit(m, image.Rectangle{at, at.Add(f.Rect.Size())}, f, image.Point{})
	}
	return m
}

func TestRenderEqualsScaledMap(t *testing.T) {
	s := genSet(t)
	full := fullMap(t, s)
	l := loader.NewLocal(s, 0)
	for _, c := range []struct {
		r Region
		n int
	}{
		{Region{0, 0, s.MapW(), s.MapH()}, 4},
		{Region{30, 10, 200, 90}, 2},
		{Region{75, 35, 10, 10}, 5},
		{Region{0, 0, s.MapW(), s.MapH()}, 1},
	} {
		p, err := At(s, c.r, c.n)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Render(context.Background(), l, p)
		if err != nil {
			t.Fatal(err)
		}
		sub := full.SubImage(image.Rect(p.Region.X, p.Region.Y, p.Region.X+p.Region.W, p.Region.Y+p.Region.H))
		want := tiles.Downscale(sub, c.n)
		if want.Rect.Size() != res.Img.Rect.Size() {
			t.Fatalf("%v 1:%d: size %v, want %v", c.r, c.n, res.Img.Rect.Size(), want.Rect.Size())
		}
		for y := 0; y < want.Rect.Dy(); y++ {
			for x := 0; x < want.Rect.Dx(); x++ {
				if res.Img.RGBAAt(x, y) != want.RGBAAt(x, y) {
					t.Fatalf("%v 1:%d: pixel (%d,%d) %v, want %v", c.r, c.n, x, y, res.Img.RGBAAt(x, y), want.RGBAAt(x, y))
				}
			}
		}
	}
}

func TestRenderMissingTile(t *testing.T) {
	s := genSet(t)
	bad, corrupt := tiles.ID{Col: 1, Row: 1}, tiles.ID{Col: 3, Row: 0}
	os.Remove(s.Path(bad, s.Holders(bad)[0]))
	os.WriteFile(s.Path(corrupt, s.Holders(corrupt)[0]), []byte("garbage"), 0o644)
	p, err := At(s, Region{0, 0, s.MapW(), s.MapH()}, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Render(context.Background(), loader.NewLocal(s, 0), p)
	if !errors.Is(err, tiles.ErrMissing) || !errors.Is(err, tiles.ErrCorrupt) {
		t.Fatalf("error %v, want ErrMissing and ErrCorrupt", err)
	}
	if !strings.Contains(err.Error(), bad.Name()) || !strings.Contains(err.Error(), corrupt.Name()) {
		t.Errorf("error does not name the tiles: %v", err)
	}
	if res == nil || res.Img == nil {
		t.Fatal("no image")
	}
	// The missing tile's area is painted Missing, the others are not.
	if c := res.Img.RGBAAt(1*40+20, 1*20+10); c != Missing {
		t.Errorf("missing tile area %v", c)
	}
	if c := res.Img.RGBAAt(20, 10); c == Missing {
		t.Errorf("good tile painted missing")
	}
	failed := 0
	for _, tr := range res.Tiles {
		if tr.Err != nil {
			failed++
		} else if tr.Source != "local" {
			t.Errorf("source %q", tr.Source)
		}
	}
	if failed != 2 {
		t.Errorf("%d failed tiles, want 2", failed)
	}
}

func BenchmarkRenderPaper300(b *testing.B) {
	o := tiles.DefaultGenOptions(b.TempDir())
	s, err := tiles.Generate(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	p, err := Fit(s, Region{0, 0, s.MapW(), s.MapH()}, Window{600, 600})
	if err != nil {
		b.Fatal(err)
	}
	l := loader.NewLocal(s, 0)
	for b.Loop() {
		if _, err := Render(context.Background(), l, p); err != nil {
			b.Fatal(err)
		}
	}
}
