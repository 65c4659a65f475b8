package tiles

import (
	"fmt"
	"image"
	"math"
)

// How a source map fills a grid whose shape is not exactly its own.
const (
	// FitPad scales the source to fit inside the map and fills the rest
	// with Pad: nothing of the source is lost.
	FitPad = "pad"
	// FitCrop scales the source to cover the map and cuts what sticks
	// out, evenly on both sides.
	FitCrop = "crop"
)

// Pad is the colour of the map outside the source (FitPad).
var Pad = [3]uint8{12, 14, 24}

// Geometry is where a source map lands on a grid of tiles: it is scaled
// by the same factor on both axes, so its shape is kept.
type Geometry struct {
	Cols, Rows int
	MapW, MapH int
	SrcW, SrcH int
	// Scale is map pixels per source pixel, on both axes.
	Scale float64
	// Placed is the scaled source in map pixels: it may stick out of the
	// map (FitCrop) or leave a border (FitPad).
	Placed image.Rectangle
	Fit    string
}

// Layout places a srcW x srcH source on the grid o asks for. Columns or
// rows left at 0 are chosen from the source: by default the columns that
// fit its width at its resolution, and the rows that keep its shape. The
// source is never stretched; where the grid's shape differs from the
// source's it is padded or cropped as o.Fit says, and it is never scaled
// up unless o.Upscale.
func Layout(srcW, srcH int, o GenOptions) (Geometry, error) {
	if srcW < 1 || srcH < 1 {
		return Geometry{}, fmt.Errorf("%w: source of %dx%d pixels", ErrBadSet, srcW, srcH)
	}
	if o.TileW < 1 || o.TileH < 1 || o.TileW > MaxTileSide || o.TileH > MaxTileSide {
		return Geometry{}, fmt.Errorf("%w: tile size %dx%d (1..%d per side)", ErrBadSet, o.TileW, o.TileH, MaxTileSide)
	}
	fit := o.Fit
	if fit == "" {
		fit = FitPad
	}
	if fit != FitPad && fit != FitCrop {
		return Geometry{}, fmt.Errorf("%w: fit %q (%s or %s)", ErrBadSet, fit, FitPad, FitCrop)
	}
	aspect := float64(srcW) / float64(srcH)
	cols, rows := o.Cols, o.Rows
	switch {
	case cols <= 0 && rows <= 0:
		cols = max(1, srcW/o.TileW)
		rows = max(1, int(math.Round(float64(cols*o.TileW)/aspect/float64(o.TileH))))
	case cols <= 0:
		cols = max(1, int(math.Round(float64(rows*o.TileH)*aspect/float64(o.TileW))))
	case rows <= 0:
		rows = max(1, int(math.Round(float64(cols*o.TileW)/aspect/float64(o.TileH))))
	}
	if cols > MaxGrid || rows > MaxGrid {
		return Geometry{}, fmt.Errorf("%w: grid %dx%d (1..%d per side)", ErrBadSet, cols, rows, MaxGrid)
	}
	g := Geometry{Cols: cols, Rows: rows, MapW: cols * o.TileW, MapH: rows * o.TileH, SrcW: srcW, SrcH: srcH, Fit: fit}
	fx, fy := float64(g.MapW)/float64(srcW), float64(g.MapH)/float64(srcH)
	g.Scale = min(fx, fy)
	if fit == FitCrop {
		g.Scale = max(fx, fy)
	}
	if g.Scale > 1 && !o.Upscale {
		return Geometry{}, fmt.Errorf("%w: a %dx%d map (%dx%d tiles of %dx%d) would scale the %dx%d source up %.2fx: ask for it (gen --upscale), or give fewer columns or rows, or smaller tiles",
			ErrBadSet, g.MapW, g.MapH, cols, rows, o.TileW, o.TileH, srcW, srcH, g.Scale)
	}
	w := int(math.Round(float64(srcW) * g.Scale))
	h := int(math.Round(float64(srcH) * g.Scale))
	x0, y0 := (g.MapW-w)/2, (g.MapH-h)/2
	g.Placed = image.Rect(x0, y0, x0+w, y0+h)
	return g, nil
}

// String describes g: "1920x960 map (3x2 tiles) from a 2048x1024 source scaled 0.94x".
func (g Geometry) String() string {
	s := fmt.Sprintf("%dx%d map (%dx%d tiles) from a %dx%d source scaled %.3gx", g.MapW, g.MapH, g.Cols, g.Rows, g.SrcW, g.SrcH, g.Scale)
	if g.Scale > 1 {
		s += " (upscaled)"
	}
	m := image.Rect(0, 0, g.MapW, g.MapH)
	switch {
	case g.Placed == m:
	case g.Placed.In(m):
		s += fmt.Sprintf(", padded %d px left/right and %d px top/bottom", g.Placed.Min.X, g.Placed.Min.Y)
	default:
		s += fmt.Sprintf(", cropped %d px left/right and %d px top/bottom", max(0, -g.Placed.Min.X), max(0, -g.Placed.Min.Y))
	}
	return s
}
