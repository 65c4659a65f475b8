package tiles

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"io/fs"
	"os"
)

// Errors of loading a tile, testable with errors.Is; the *TileError
// wrapping them names the tile and its file.
var (
	ErrMissing = errors.New("tile file missing")
	ErrCorrupt = errors.New("tile file corrupt")
	ErrScale   = errors.New("scale does not divide the tile size")
)

// TileError is a failure to load one tile.
type TileError struct {
	Tile ID
	Path string
	Err  error
}

func (e *TileError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("tile %s %s: %v", e.Tile.Name(), e.Tile, e.Err)
	}
	return fmt.Sprintf("tile %s %s: %s: %v", e.Tile.Name(), e.Tile, e.Path, e.Err)
}

func (e *TileError) Unwrap() error { return e.Err }

// LoadScaled reads tile id from node's directory, decodes it, checks its
// size and reduces it 1:scale with Downscale. Local loaders and daemons
// both use it, so their pixels are identical.
func (s Set) LoadScaled(id ID, node, scale int) (*image.RGBA, error) {
	if !s.Contains(id) {
		return nil, &TileError{Tile: id, Err: fmt.Errorf("%w: not in the %dx%d grid", ErrBadSet, s.Cols, s.Rows)}
	}
	if !s.ValidScale(scale) {
		return nil, &TileError{Tile: id, Err: fmt.Errorf("%w: 1:%d of %dx%d", ErrScale, scale, s.TileW, s.TileH)}
	}
	path := s.Path(id, node)
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &TileError{id, path, ErrMissing}
		}
		return nil, &TileError{id, path, err}
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, &TileError{id, path, fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	if sz := img.Bounds().Size(); sz.X != s.TileW || sz.Y != s.TileH {
		return nil, &TileError{id, path, fmt.Errorf("%w: %dx%d pixels, want %dx%d", ErrCorrupt, sz.X, sz.Y, s.TileW, s.TileH)}
	}
	return Downscale(img, scale), nil
}

// Downscale reduces img 1:n with a box filter: each output pixel is the
// rounded mean of an n x n block of input pixels (a partial block at the
// right or bottom edge averages what it covers). n=1 converts to RGBA.
func Downscale(img image.Image, n int) *image.RGBA {
	if n < 1 {
		n = 1
	}
	b := img.Bounds()
	src, ok := img.(*image.RGBA)
	if !ok || b.Min != (image.Point{}) {
		src = image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(src, src.Rect, img, b.Min, draw.Src)
	}
	if n == 1 {
		return src
	}
	w, h := src.Rect.Dx(), src.Rect.Dy()
	ow, oh := (w+n-1)/n, (h+n-1)/n
	dst := image.NewRGBA(image.Rect(0, 0, ow, oh))
	sums := make([]uint32, ow*4)
	for oy := 0; oy < oh; oy++ {
		clear(sums)
		y0, y1 := oy*n, min(oy*n+n, h)
		for y := y0; y < y1; y++ {
			row := src.Pix[y*src.Stride : y*src.Stride+w*4]
			for ox := 0; ox < ow; ox++ {
				x0, x1 := ox*n, min(ox*n+n, w)
				var r, g, bl, a uint32
				px := row[x0*4 : x1*4]
				for i := 0; i+3 < len(px); i += 4 {
					r += uint32(px[i])
					g += uint32(px[i+1])
					bl += uint32(px[i+2])
					a += uint32(px[i+3])
				}
				s := sums[ox*4 : ox*4+4]
				s[0] += r
				s[1] += g
				s[2] += bl
				s[3] += a
			}
		}
		out := dst.Pix[oy*dst.Stride:]
		for ox := 0; ox < ow; ox++ {
			cnt := uint32((y1 - y0) * (min(ox*n+n, w) - ox*n))
			s := sums[ox*4 : ox*4+4]
			for k := 0; k < 4; k++ {
				out[ox*4+k] = uint8((s[k] + cnt/2) / cnt)
			}
		}
	}
	return dst
}
