package tiles

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	_ "image/png" // source maps may be PNG
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// GenOptions describes a tile set to generate.
type GenOptions struct {
	Dir          string
	Cols, Rows   int
	TileW, TileH int
	Nodes        int
	Replicas     int
	// Source is a JPEG or PNG map scaled to the map size; empty draws a
	// procedural terrain map.
	Source string
	// Grid draws tile borders and "R07 C03" labels (always on for the
	// procedural map).
	Grid bool
	// Quality is the JPEG quality (default 85).
	Quality int
}

// DefaultGenOptions is the paper's map: 15x20 tiles of 640x480 pixels.
func DefaultGenOptions(dir string) GenOptions {
	return GenOptions{Dir: dir, Cols: 15, Rows: 20, TileW: 640, TileH: 480, Nodes: 1, Replicas: 1, Quality: 85}
}

// Generate writes the tile set described by o and its manifest.
func Generate(ctx context.Context, o GenOptions) (Set, error) {
	s := Set{Dir: o.Dir, Cols: o.Cols, Rows: o.Rows, TileW: o.TileW, TileH: o.TileH,
		Nodes: o.Nodes, Replicas: o.Replicas, Source: o.Source}
	if s.Source == "" {
		s.Source = "procedural"
	}
	if err := s.Validate(); err != nil {
		return Set{}, err
	}
	if o.Quality == 0 {
		o.Quality = 85
	}
	if o.Quality < 1 || o.Quality > 100 {
		return Set{}, fmt.Errorf("%w: JPEG quality %d (1..100)", ErrBadSet, o.Quality)
	}
	var src *image.RGBA
	if o.Source != "" {
		var err error
		if src, err = readSource(o.Source); err != nil {
			return Set{}, err
		}
	} else {
		o.Grid = true
	}
	for k := 0; k < s.Nodes; k++ {
		if err := os.MkdirAll(NodeDir(s.Dir, k), 0o755); err != nil {
			return Set{}, err
		}
	}
	ids := make(chan ID)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if err := writeTile(s, o, src, id); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	var err error
feed:
	for _, id := range s.All() {
		select {
		case ids <- id:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(ids)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	if err != nil {
		return Set{}, err
	}
	return s, s.Save()
}

func readSource(path string) (*image.RGBA, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tiles: source map: %w", err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("tiles: source map %s: %w", path, err)
	}
	b := img.Bounds()
	rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Rect, img, b.Min, draw.Src)
	return rgba, nil
}

// DrawTile draws tile id of the map o describes.
func DrawTile(s Set, o GenOptions, src *image.RGBA, id ID) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, s.TileW, s.TileH))
	origin := image.Pt(id.Col*s.TileW, id.Row*s.TileH)
	if src == nil {
		drawTerrain(img, origin)
	} else {
		sampleSource(img, origin, src, s.MapW(), s.MapH())
	}
	if o.Grid {
		drawGrid(img, id)
	}
	return img
}

// sampleSource fills img with the bilinear interpolation of src stretched
// over the whole map.
func sampleSource(img *image.RGBA, origin image.Point, src *image.RGBA, mapW, mapH int) {
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	fx, fy := float64(sw)/float64(mapW), float64(sh)/float64(mapH)
	for y := 0; y < img.Rect.Dy(); y++ {
		sy := (float64(origin.Y+y)+0.5)*fy - 0.5
		y0, ty := splitCoord(sy, sh)
		y1 := min(y0+1, sh-1)
		for x := 0; x < img.Rect.Dx(); x++ {
			sx := (float64(origin.X+x)+0.5)*fx - 0.5
			x0, tx := splitCoord(sx, sw)
			x1 := min(x0+1, sw-1)
			p00, p10 := src.Pix[src.PixOffset(x0, y0):], src.Pix[src.PixOffset(x1, y0):]
			p01, p11 := src.Pix[src.PixOffset(x0, y1):], src.Pix[src.PixOffset(x1, y1):]
			o := img.PixOffset(x, y)
			for k := 0; k < 3; k++ {
				top := float64(p00[k]) + (float64(p10[k])-float64(p00[k]))*tx
				bot := float64(p01[k]) + (float64(p11[k])-float64(p01[k]))*tx
				img.Pix[o+k] = clamp8(top + (bot-top)*ty)
			}
			img.Pix[o+3] = 255
		}
	}
}

func splitCoord(v float64, n int) (int, float64) {
	if v <= 0 {
		return 0, 0
	}
	i := int(v)
	if i >= n-1 {
		return n - 1, 0
	}
	return i, v - float64(i)
}

// drawGrid draws the tile's border and its label.
func drawGrid(img *image.RGBA, id ID) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	dark := color.RGBA{20, 20, 20, 255}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if x < 2 || y < 2 || x >= w-2 || y >= h-2 {
				img.SetRGBA(x, y, dark)
			}
		}
	}
	label := fmt.Sprintf("R%02d C%02d", id.Row, id.Col)
	k := max(1, min(w/50, h/30))
	sz := textSize(label, k)
	at := image.Pt((w-sz.X)/2, (h-sz.Y)/2)
	box := image.Rectangle{at, at.Add(sz)}.Inset(-k)
	draw.Draw(img, box, image.NewUniform(color.RGBA{0, 0, 0, 255}), image.Point{}, draw.Src)
	drawText(img, at, label, k, color.RGBA{255, 255, 80, 255})
}

func writeTile(s Set, o GenOptions, src *image.RGBA, id ID) error {
	img := DrawTile(s, o, src, id)
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: o.Quality}); err != nil {
		return fmt.Errorf("tiles: encode %s: %w", id.Name(), err)
	}
	for _, k := range s.Holders(id) {
		if err := writeFileAtomic(s.Path(id, k), buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Relayout makes, in dir, a tile set with the tiles of s spread over nodes
// node directories with replicas copies each, hard-linking the files of s
// (copying where links are impossible).
func Relayout(s Set, dir string, nodes, replicas int) (Set, error) {
	out := s
	out.Dir, out.Nodes, out.Replicas = dir, nodes, replicas
	if err := out.Validate(); err != nil {
		return Set{}, err
	}
	for k := 0; k < nodes; k++ {
		if err := os.MkdirAll(NodeDir(dir, k), 0o755); err != nil {
			return Set{}, err
		}
	}
	for _, id := range s.All() {
		from := s.Path(id, s.Holders(id)[0])
		for _, k := range out.Holders(id) {
			to := out.Path(id, k)
			os.Remove(to)
			if err := os.Link(from, to); err != nil {
				b, rerr := os.ReadFile(from)
				if rerr != nil {
					return Set{}, rerr
				}
				if err := writeFileAtomic(to, b); err != nil {
					return Set{}, err
				}
			}
		}
	}
	return out, out.Save()
}
