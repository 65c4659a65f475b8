package tiles

import (
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// writeSource writes a w x h PNG: a grey background with a red square of
// side w/4 centred on it.
func writeSource(t *testing.T, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	side := min(w, h) / 4
	sq := image.Rect(w/2-side/2, h/2-side/2, w/2-side/2+side, h/2-side/2+side)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{120, 120, 120, 255}
			if image.Pt(x, y).In(sq) {
				c = color.RGBA{230, 20, 20, 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	path := filepath.Join(t.TempDir(), "src.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	return path
}

// assemble reads every tile of s at 1:1 into one map image.
func assemble(t *testing.T, s Set) *image.RGBA {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, s.MapW(), s.MapH()))
	for _, id := range s.All() {
		f, err := s.LoadScaled(id, s.Holders(id)[0], 1)
		if err != nil {
			t.Fatal(err)
		}
		for y := 0; y < s.TileH; y++ {
			copy(m.Pix[m.PixOffset(id.Col*s.TileW, id.Row*s.TileH+y):], f.Pix[f.PixOffset(0, y):f.PixOffset(s.TileW, y)])
		}
	}
	return m
}

// redBox is the bounding box of the red pixels of m.
func redBox(m *image.RGBA) image.Rectangle {
	var r image.Rectangle
	for y := m.Rect.Min.Y; y < m.Rect.Max.Y; y++ {
		for x := m.Rect.Min.X; x < m.Rect.Max.X; x++ {
			if c := m.RGBAAt(x, y); c.R > 180 && c.G < 80 && c.B < 80 {
				r = r.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return r
}

// A source keeps its shape and is not scaled up: the grid is chosen from
// it, the map is no larger than the source, and a square in the source is
// a square on the map.
func TestGenerateKeepsSourceShape(t *testing.T) {
	for _, c := range []struct {
		name       string
		w, h       int
		cols, rows int // the grid expected for 40x30 tiles
	}{
		{"2:1", 400, 200, 10, 7},      // 400x210: 5 px of pad top and bottom
		{"2.16:1", 432, 200, 10, 6},   // 400x180: scaled 0.9, 5 px of pad left and right
		{"1:1", 300, 300, 7, 9},       // 280x270
		{"tall 1:3", 130, 390, 3, 12}, // 120x360
	} {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultGenOptions(t.TempDir())
			o.Cols, o.Rows, o.TileW, o.TileH, o.Quality = 0, 0, 40, 30, 95
			o.Source = writeSource(t, c.w, c.h)
			s, err := Generate(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if s.Cols != c.cols || s.Rows != c.rows {
				t.Errorf("grid %dx%d, want %dx%d (%s)", s.Cols, s.Rows, c.cols, c.rows, s.Layout)
			}
			// Rounding the grid to whole tiles may add pad, never more
			// than a tile.
			if s.MapW() > c.w+s.TileW || s.MapH() > c.h+s.TileH {
				t.Errorf("%dx%d map from a %dx%d source (%s)", s.MapW(), s.MapH(), c.w, c.h, s.Layout)
			}
			// The grid's shape is the source's to within one tile.
			src, got := float64(c.w)/float64(c.h), float64(s.MapW())/float64(s.MapH())
			if math.Abs(float64(s.MapH())*src-float64(s.MapW())) > float64(s.TileW) && math.Abs(float64(s.MapW())/src-float64(s.MapH())) > float64(s.TileH) {
				t.Errorf("map shape %.3f, source %.3f", got, src)
			}
			box := redBox(assemble(t, s))
			if box.Empty() {
				t.Fatalf("no red square on the map (%s)", s.Layout)
			}
			// JPEG's 2x2 chroma blocks blur the edges by a pixel.
			if d := box.Dx() - box.Dy(); d < -3 || d > 3 {
				t.Errorf("the source's square is %dx%d on the map: stretched (%s)", box.Dx(), box.Dy(), s.Layout)
			}
			if side := min(c.w, c.h) / 4; box.Dx() > side+1 || box.Dy() > side+1 {
				t.Errorf("the source's %d px square is %v on the map: scaled up (%s)", side, box.Size(), s.Layout)
			}
			if s.Layout == "" {
				t.Errorf("manifest does not say how the source was placed")
			}
			t.Logf("%s: %s; square %v", c.name, s.Layout, box.Size())
		})
	}
}

// A grid whose shape differs from the source's is padded or cropped as
// asked, never stretched; a map larger than the source needs Upscale.
func TestGeneratePadCropUpscale(t *testing.T) {
	path := writeSource(t, 432, 200) // 2.16:1 on a 2:1 grid
	gen := func(fit string, cols, rows int, up bool) (Set, *image.RGBA, error) {
		o := DefaultGenOptions(t.TempDir())
		o.Cols, o.Rows, o.TileW, o.TileH, o.Quality, o.Source, o.Fit, o.Upscale = cols, rows, 40, 30, 95, path, fit, up
		s, err := Generate(context.Background(), o)
		if err != nil {
			return s, nil, err
		}
		return s, assemble(t, s), nil
	}
	isPad := func(c color.RGBA) bool {
		return absDiff(c.R, Pad[0]) < 12 && absDiff(c.G, Pad[1]) < 12 && absDiff(c.B, Pad[2]) < 12
	}
	s, m, err := gen(FitPad, 10, 5, false) // 400x150: the source scaled 0.75, 25 px left and right
	if err != nil {
		t.Fatal(err)
	}
	if !isPad(m.RGBAAt(5, 75)) || !isPad(m.RGBAAt(394, 75)) || isPad(m.RGBAAt(200, 2)) {
		t.Errorf("pad: %s; left %v right %v top %v", s.Layout, m.RGBAAt(5, 75), m.RGBAAt(394, 75), m.RGBAAt(200, 2))
	}
	if b := redBox(m); b.Dx()-b.Dy() < -3 || b.Dx()-b.Dy() > 3 {
		t.Errorf("pad: square %v", b.Size())
	}
	s, m, err = gen(FitCrop, 10, 6, false) // 400x180: the source scaled 0.926, cropped 0 and top/bottom... scaled to cover
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []image.Point{{1, 1}, {398, 1}, {1, 178}, {398, 178}} {
		if isPad(m.RGBAAt(p.X, p.Y)) {
			t.Errorf("crop: pad colour at %v (%s)", p, s.Layout)
		}
	}
	if b := redBox(m); b.Dx()-b.Dy() < -3 || b.Dx()-b.Dy() > 3 {
		t.Errorf("crop: square %v", b.Size())
	}
	if _, _, err := gen(FitPad, 20, 0, false); !errors.Is(err, ErrBadSet) {
		t.Errorf("800 px wide from a 432 px source without Upscale: %v, want ErrBadSet", err)
	}
	s, m, err = gen(FitPad, 20, 0, true)
	if err != nil {
		t.Fatalf("with Upscale: %v", err)
	}
	if s.MapW() != 800 || s.Rows != 12 {
		t.Errorf("upscaled grid %dx%d (%s)", s.Cols, s.Rows, s.Layout)
	}
	if b := redBox(m); b.Dx()-b.Dy() < -3 || b.Dx()-b.Dy() > 3 {
		t.Errorf("upscaled: square %v", b.Size())
	}
	if _, _, err := gen("stretch", 0, 0, false); !errors.Is(err, ErrBadSet) {
		t.Errorf("fit stretch: %v", err)
	}
}

func absDiff(a, b uint8) uint8 {
	if a > b {
		return a - b
	}
	return b - a
}
