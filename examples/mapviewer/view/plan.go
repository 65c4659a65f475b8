// Package view composes a map region from scaled tile fragments (the
// paper's imgViewer): it picks the scale that fits the region in the
// window, asks a loader.Loader for every tile the region touches, one
// goroutine per tile, and reassembles the fragments into one bitmap.
package view

import (
	"errors"
	"fmt"
	"image"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

// MaxWindow bounds each side of a window, in pixels.
const MaxWindow = 4096

// ErrBadRequest reports a region, window or scale that cannot be viewed.
var ErrBadRequest = errors.New("view: bad request")

// Region is a rectangle of the map in map pixels.
type Region struct{ X, Y, W, H int }

func (r Region) String() string { return fmt.Sprintf("%dx%d+%d+%d", r.W, r.H, r.X, r.Y) }

// Window is the size of the displayed bitmap.
type Window struct{ W, H int }

// Placement puts the fragment of a tile at a point of the output.
type Placement struct {
	ID tiles.ID
	At image.Point // the fragment's top-left corner in the output; may be negative
}

// Plan is what to load and where to put it for one view.
type Plan struct {
	Set    tiles.Set
	Region Region // origin snapped down to a multiple of Scale
	Scale  int    // 1:Scale
	Size   image.Point
	Tiles  []Placement
}

func checkRegion(s tiles.Set, r Region) error {
	if r.X < 0 || r.Y < 0 || r.W < 1 || r.H < 1 || r.X > s.MapW()-r.W || r.Y > s.MapH()-r.H {
		return fmt.Errorf("%w: region %s is not inside the %dx%d map", ErrBadRequest, r, s.MapW(), s.MapH())
	}
	return nil
}

func checkWindow(w Window) error {
	if w.W < 1 || w.H < 1 || w.W > MaxWindow || w.H > MaxWindow {
		return fmt.Errorf("%w: window %dx%d (1..%d per side)", ErrBadRequest, w.W, w.H, MaxWindow)
	}
	return nil
}

// Fit plans region r in window win at the smallest scale the tiles can be
// reduced by exactly (tiles.Set.Scales) that makes r fit.
func Fit(s tiles.Set, r Region, win Window) (Plan, error) {
	if err := checkRegion(s, r); err != nil {
		return Plan{}, err
	}
	if err := checkWindow(win); err != nil {
		return Plan{}, err
	}
	for _, n := range s.Scales() {
		if ceilDiv(r.W, n) <= win.W && ceilDiv(r.H, n) <= win.H {
			return At(s, r, n)
		}
	}
	return Plan{}, fmt.Errorf("%w: region %s does not fit a %dx%d window at any scale of %dx%d tiles (largest 1:%d)",
		ErrBadRequest, r, win.W, win.H, s.TileW, s.TileH, s.Scales()[len(s.Scales())-1])
}

// At plans region r at scale 1:n; the output is r reduced 1:n.
func At(s tiles.Set, r Region, n int) (Plan, error) {
	if err := checkRegion(s, r); err != nil {
		return Plan{}, err
	}
	if !s.ValidScale(n) {
		return Plan{}, fmt.Errorf("%w: scale 1:%d does not divide %dx%d tiles (scales: %v)", ErrBadRequest, n, s.TileW, s.TileH, s.Scales())
	}
	// Snap the origin to the scaled grid so fragments land on whole pixels.
	dx, dy := r.X%n, r.Y%n
	r.X, r.Y = r.X-dx, r.Y-dy
	p := Plan{Set: s, Region: r, Scale: n, Size: image.Pt(ceilDiv(r.W, n), ceilDiv(r.H, n))}
	if err := checkWindow(Window{p.Size.X, p.Size.Y}); err != nil {
		return Plan{}, fmt.Errorf("%w (region %s at 1:%d)", err, r, n)
	}
	c0, c1 := r.X/s.TileW, (r.X+r.W-1)/s.TileW
	r0, r1 := r.Y/s.TileH, (r.Y+r.H-1)/s.TileH
	for row := r0; row <= r1; row++ {
		for col := c0; col <= c1; col++ {
			p.Tiles = append(p.Tiles, Placement{
				ID: tiles.ID{Col: col, Row: row},
				At: image.Pt((col*s.TileW-r.X)/n, (row*s.TileH-r.Y)/n),
			})
		}
	}
	return p, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Paper is one of the seven regions of the paper's Figure 5.
type Paper struct {
	// Name is "R5 1:10": the region's number and the scale Fit uses for
	// it on this tile set, which can differ from the paper's (Nominal)
	// when the paper's does not divide the tiles.
	Name   string
	Region Region
	// Scale is the scale Fit plans the region at (0 if it cannot).
	Scale int
	// Nominal is the paper's scale for the region (PaperScales).
	Nominal int
}

// PaperScales are the scale factors of the paper's seven regions.
var PaperScales = []int{1, 2, 4, 5, 8, 10, 16}

// PaperRegions are the regions of Figure 5 for window win: region k is the
// window enlarged PaperScales[k] times, anchored at the map's top-left
// corner (clipped to the map). For the paper's 9600x9600 map of 640x480
// tiles and a 600x600 window they cover 2, 6, 20, 35, 80, 130 and 300
// tiles.
func PaperRegions(s tiles.Set, win Window) []Paper {
	var out []Paper
	for i, n := range PaperScales {
		r := Region{0, 0, min(n*win.W, s.MapW()), min(n*win.H, s.MapH())}
		pr := Paper{Region: r, Nominal: n}
		if p, err := Fit(s, r, win); err == nil {
			pr.Scale = p.Scale
		}
		pr.Name = fmt.Sprintf("R%d 1:%d", i+1, pr.Scale)
		out = append(out, pr)
	}
	return out
}
