package view

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"sync"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/loader"
)

// TileResult is how one tile of a view was obtained.
type TileResult struct {
	Placement
	Source  string
	Err     error
	Elapsed time.Duration
}

// Result is a rendered view.
type Result struct {
	Img     *image.RGBA
	Plan    Plan
	Tiles   []TileResult
	Elapsed time.Duration
}

// Missing is the colour of the area of a tile that could not be loaded.
var Missing = color.RGBA{128, 0, 64, 255}

// Render loads every tile of p through l, one goroutine per tile, and
// assembles the view. Tiles that fail are painted Missing and their errors
// joined into the returned error; the rest of the view is rendered.
func Render(ctx context.Context, l loader.Loader, p Plan) (*Result, error) {
	start := time.Now()
	img := image.NewRGBA(image.Rect(0, 0, p.Size.X, p.Size.Y))
	res := &Result{Img: img, Plan: p, Tiles: make([]TileResult, len(p.Tiles))}
	fw, fh := p.Set.TileW/p.Scale, p.Set.TileH/p.Scale
	var wg sync.WaitGroup
	for i, pl := range p.Tiles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			tr := TileResult{Placement: pl}
			f, err := l.Load(ctx, pl.ID, p.Scale)
			if err == nil && (f.Img == nil || f.Img.Rect.Dx() != fw || f.Img.Rect.Dy() != fh) {
				err = fmt.Errorf("tile %s %s: fragment is not %dx%d", pl.ID.Name(), pl.ID, fw, fh)
			}
			tr.Source, tr.Err = f.Source, err
			dst := image.Rectangle{pl.At, pl.At.Add(image.Pt(fw, fh))}.Intersect(img.Rect)
			if err != nil {
				fill(img, dst, Missing)
			} else {
				blit(img, dst, f.Img, dst.Min.Sub(pl.At))
			}
			tr.Elapsed = time.Since(t0)
			res.Tiles[i] = tr
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	var errs []error
	for _, t := range res.Tiles {
		if t.Err != nil {
			errs = append(errs, t.Err)
		}
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("view: %d of %d tiles failed: %w", len(errs), len(res.Tiles), errors.Join(errs...))
	}
	return res, nil
}

// blit copies the pixels of src starting at sp into the rectangle r of dst.
func blit(dst *image.RGBA, r image.Rectangle, src *image.RGBA, sp image.Point) {
	n := r.Dx() * 4
	for y := 0; y < r.Dy(); y++ {
		d := dst.PixOffset(r.Min.X, r.Min.Y+y)
		s := src.PixOffset(src.Rect.Min.X+sp.X, src.Rect.Min.Y+sp.Y+y)
		copy(dst.Pix[d:d+n], src.Pix[s:s+n])
	}
}

func fill(dst *image.RGBA, r image.Rectangle, c color.RGBA) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			dst.SetRGBA(x, y, c)
		}
	}
}
