package tiles

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"io/fs"
	"os"
	"runtime"
	"sync"
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
	return s.LoadScaledTo(id, node, scale, nil)
}

// LoadScaledTo is LoadScaled returning pixels in pix when it holds them
// (a reply buffer, so that they are not copied again): the result's Pix is
// then pix[:w*h*4]. The file is read into a pooled buffer and a YCbCr
// tile is reduced straight from its planes, so that a tile costs the
// decoder's own image and no RGBA copy of the whole tile.
func (s Set) LoadScaledTo(id ID, node, scale int, pix []byte) (*image.RGBA, error) {
	return s.loadScaledTo(id, node, scale, pix, false)
}

// LoadScaledToYielding is LoadScaledTo, which lets the goroutine's
// processor run other goroutines between decoding the tile and scaling
// it: a new time slice for each half. A process with one processor that
// decodes tiles (a daemon sharing its host's CPUs with others) took
// longer than the runtime's 10 ms slice for a whole tile when its CPU was
// shared, and was preempted by a signal, after which the runtime's
// monitor thread woke every 20 µs for a while.
func (s Set) LoadScaledToYielding(id ID, node, scale int, pix []byte) (*image.RGBA, error) {
	return s.loadScaledTo(id, node, scale, pix, true)
}

func (s Set) loadScaledTo(id ID, node, scale int, pix []byte, yield bool) (*image.RGBA, error) {
	if !s.Contains(id) {
		return nil, &TileError{Tile: id, Err: fmt.Errorf("%w: not in the %dx%d grid", ErrBadSet, s.Cols, s.Rows)}
	}
	if !s.ValidScale(scale) {
		return nil, &TileError{Tile: id, Err: fmt.Errorf("%w: 1:%d of %dx%d", ErrScale, scale, s.TileW, s.TileH)}
	}
	path := s.Path(id, node)
	buf := fileBufs.Get().(*bytes.Buffer)
	defer putFileBuf(buf)
	if err := readFileTo(buf, path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &TileError{id, path, ErrMissing}
		}
		return nil, &TileError{id, path, err}
	}
	img, err := jpeg.Decode(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, &TileError{id, path, fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	if sz := img.Bounds().Size(); sz.X != s.TileW || sz.Y != s.TileH {
		return nil, &TileError{id, path, fmt.Errorf("%w: %dx%d pixels, want %dx%d", ErrCorrupt, sz.X, sz.Y, s.TileW, s.TileH)}
	}
	if yield {
		runtime.Gosched()
	}
	return downscaleTo(pix, img, scale), nil
}

// fileBufs holds the buffers tile files are read into.
var fileBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledFile is the largest buffer kept for reuse.
const maxPooledFile = 4 << 20

func putFileBuf(b *bytes.Buffer) {
	if b.Cap() <= maxPooledFile {
		b.Reset()
		fileBufs.Put(b)
	}
}

// readFileTo reads the file at path into buf.
func readFileTo(buf *bytes.Buffer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() < maxPooledFile {
		buf.Grow(int(st.Size()) + bytes.MinRead)
	}
	_, err = buf.ReadFrom(f)
	return err
}

// Downscale reduces img 1:n with a box filter: each output pixel is the
// rounded mean of an n x n block of input pixels (a partial block at the
// right or bottom edge averages what it covers). n=1 converts to RGBA.
func Downscale(img image.Image, n int) *image.RGBA { return downscaleTo(nil, img, n) }

// downscaleTo is Downscale writing the output into pix when it is large
// enough. A YCbCr image (what JPEG decodes to) is reduced from its planes,
// each pixel converted as image/draw converts it, so that the result
// equals converting to RGBA first without making that copy.
func downscaleTo(pix []byte, img image.Image, n int) *image.RGBA {
	if n < 1 {
		n = 1
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	ow, oh := (w+n-1)/n, (h+n-1)/n
	if yc, ok := img.(*image.YCbCr); ok && n > 1 && b.Min == (image.Point{}) {
		if hs, vs, ok := chromaShifts(yc.SubsampleRatio); ok {
			dst := newRGBA(pix, ow, oh)
			downscaleYCbCr(dst, yc, n, hs, vs)
			return dst
		}
	}
	src, ok := img.(*image.RGBA)
	if !ok || b.Min != (image.Point{}) {
		if n == 1 {
			src = newRGBA(pix, w, h)
		} else {
			src = image.NewRGBA(image.Rect(0, 0, w, h))
		}
		draw.Draw(src, src.Rect, img, b.Min, draw.Src)
	}
	if n == 1 {
		return src
	}
	dst := newRGBA(pix, ow, oh)
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

// newRGBA is a w x h RGBA image on pix if it is large enough (its pixels
// are all written by the caller), else on new memory.
func newRGBA(pix []byte, w, h int) *image.RGBA {
	if cap(pix) < w*h*4 {
		return image.NewRGBA(image.Rect(0, 0, w, h))
	}
	return &image.RGBA{Pix: pix[:w*h*4], Stride: w * 4, Rect: image.Rect(0, 0, w, h)}
}

// chromaShifts is how far a pixel's x and y shift right to index the
// chroma planes of a YCbCr image with ratio r.
func chromaShifts(r image.YCbCrSubsampleRatio) (hs, vs uint, ok bool) {
	switch r {
	case image.YCbCrSubsampleRatio444:
		return 0, 0, true
	case image.YCbCrSubsampleRatio422:
		return 1, 0, true
	case image.YCbCrSubsampleRatio420:
		return 1, 1, true
	case image.YCbCrSubsampleRatio440:
		return 0, 1, true
	case image.YCbCrSubsampleRatio411:
		return 2, 0, true
	case image.YCbCrSubsampleRatio410:
		return 2, 1, true
	}
	return 0, 0, false
}

// downscaleYCbCr is the box filter of downscaleTo over src's planes (whose
// bounds start at the origin) into dst, sized for it. Alpha is opaque.
func downscaleYCbCr(dst *image.RGBA, src *image.YCbCr, n int, hs, vs uint) {
	w, h := src.Rect.Dx(), src.Rect.Dy()
	ow, oh := dst.Rect.Dx(), dst.Rect.Dy()
	var sums [3 * 256]uint32
	var sum []uint32
	if 3*ow > len(sums) {
		sum = make([]uint32, 3*ow)
	} else {
		sum = sums[:3*ow]
	}
	for oy := 0; oy < oh; oy++ {
		clear(sum)
		y0, y1 := oy*n, min(oy*n+n, h)
		for y := y0; y < y1; y++ {
			yrow := src.Y[y*src.YStride : y*src.YStride+w]
			crow := src.CStride * (y >> vs)
			cb, cr := src.Cb[crow:], src.Cr[crow:]
			for ox := 0; ox < ow; ox++ {
				x0, x1 := ox*n, min(ox*n+n, w)
				var r, g, bl uint32
				for x := x0; x < x1; x++ {
					ci := x >> hs
					pr, pg, pb := color.YCbCrToRGB(yrow[x], cb[ci], cr[ci])
					r += uint32(pr)
					g += uint32(pg)
					bl += uint32(pb)
				}
				s := sum[ox*3 : ox*3+3]
				s[0] += r
				s[1] += g
				s[2] += bl
			}
		}
		out := dst.Pix[oy*dst.Stride:]
		for ox := 0; ox < ow; ox++ {
			cnt := uint32((y1 - y0) * (min(ox*n+n, w) - ox*n))
			s := sum[ox*3 : ox*3+3]
			o := out[ox*4 : ox*4+4]
			o[0] = uint8((s[0] + cnt/2) / cnt)
			o[1] = uint8((s[1] + cnt/2) / cnt)
			o[2] = uint8((s[2] + cnt/2) / cnt)
			o[3] = 0xff
		}
	}
}
