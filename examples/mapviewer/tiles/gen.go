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
	// Source is a JPEG or PNG map; empty draws a procedural terrain map
	// (Cols x Rows tiles, any size). A source keeps its shape: Cols or
	// Rows left at 0 are chosen from it (see Layout), and it is padded
	// or cropped (Fit) where the grid's shape differs, never stretched.
	Source string
	// Fit is FitPad (default) or FitCrop.
	Fit string
	// Upscale allows a map larger than the source's resolution.
	Upscale bool
	// Grid draws tile borders and "R07 C03" labels (always on for the
	// procedural map).
	Grid bool
	// Quality is the JPEG quality (default 85).
	Quality int
}

// Paper's map: 15x20 tiles of 640x480 pixels, the procedural default.
const (
	PaperCols, PaperRows = 15, 20
	PaperTileW           = 640
	PaperTileH           = 480
)

// DefaultGenOptions is the paper's map of 15x20 tiles of 640x480 pixels
// when procedural; with a Source, Cols and Rows are to be set to 0 (or
// chosen) for the source to keep its shape.
func DefaultGenOptions(dir string) GenOptions {
	return GenOptions{Dir: dir, Cols: PaperCols, Rows: PaperRows, TileW: PaperTileW, TileH: PaperTileH, Nodes: 1, Replicas: 1, Quality: 85}
}

// Generate writes the tile set described by o and its manifest.
func Generate(ctx context.Context, o GenOptions) (Set, error) {
	if o.Quality == 0 {
		o.Quality = 85
	}
	if o.Quality < 1 || o.Quality > 100 {
		return Set{}, fmt.Errorf("%w: JPEG quality %d (1..100)", ErrBadSet, o.Quality)
	}
	var src *placedSource
	layout := ""
	if o.Source != "" {
		img, err := readSource(o.Source)
		if err != nil {
			return Set{}, err
		}
		g, err := Layout(img.Rect.Dx(), img.Rect.Dy(), o)
		if err != nil {
			return Set{}, fmt.Errorf("%s: %w", o.Source, err)
		}
		o.Cols, o.Rows, layout = g.Cols, g.Rows, g.String()
		src = placeSource(img, g)
	} else {
		o.Grid = true
		if o.Cols <= 0 {
			o.Cols = PaperCols
		}
		if o.Rows <= 0 {
			o.Rows = PaperRows
		}
	}
	s := Set{Dir: o.Dir, Cols: o.Cols, Rows: o.Rows, TileW: o.TileW, TileH: o.TileH,
		Nodes: o.Nodes, Replicas: o.Replicas, Source: o.Source, Layout: layout}
	if s.Source == "" {
		s.Source = "procedural"
	}
	if err := s.Validate(); err != nil {
		return Set{}, err
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

// DrawTile draws tile id of the map o describes (src nil: procedural).
func DrawTile(s Set, o GenOptions, src *placedSource, id ID) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, s.TileW, s.TileH))
	origin := image.Pt(id.Col*s.TileW, id.Row*s.TileH)
	if src == nil {
		drawTerrain(img, origin)
	} else {
		sampleSource(img, origin, src)
	}
	if o.Grid {
		drawGrid(img, id)
	}
	return img
}

// placedSource is a source map and where it lands on the map: map pixel
// (x, y) shows source point ((x+0.5-at.X)/scale-0.5, (y+0.5-at.Y)/scale-0.5),
// the same scale on both axes.
type placedSource struct {
	img   *image.RGBA
	at    image.Rectangle // in map pixels; outside it the map is Pad
	scale float64         // map pixels per pixel of img
}

// placeSource prepares img for g. A source reduced more than 2:1 is first
// reduced by a whole factor with the box filter, so that bilinear
// sampling does not skip pixels.
func placeSource(img *image.RGBA, g Geometry) *placedSource {
	scale := g.Scale
	if k := int(1 / scale); k >= 2 {
		img = Downscale(img, k)
		scale *= float64(k)
	}
	return &placedSource{img: img, at: g.Placed, scale: scale}
}

// sampleSource fills img, whose pixel (0,0) is map pixel origin, with
// the bilinear interpolation of the placed source, and Pad around it.
func sampleSource(img *image.RGBA, origin image.Point, ps *placedSource) {
	src := ps.img
	sw, sh := src.Rect.Dx(), src.Rect.Dy()
	f := 1 / ps.scale
	for y := 0; y < img.Rect.Dy(); y++ {
		my := origin.Y + y
		sy := (float64(my-ps.at.Min.Y)+0.5)*f - 0.5
		y0, ty := splitCoord(sy, sh)
		y1 := min(y0+1, sh-1)
		for x := 0; x < img.Rect.Dx(); x++ {
			mx := origin.X + x
			o := img.PixOffset(x, y)
			if !image.Pt(mx, my).In(ps.at) {
				img.Pix[o], img.Pix[o+1], img.Pix[o+2], img.Pix[o+3] = Pad[0], Pad[1], Pad[2], 255
				continue
			}
			sx := (float64(mx-ps.at.Min.X)+0.5)*f - 0.5
			x0, tx := splitCoord(sx, sw)
			x1 := min(x0+1, sw-1)
			p00, p10 := src.Pix[src.PixOffset(x0, y0):], src.Pix[src.PixOffset(x1, y0):]
			p01, p11 := src.Pix[src.PixOffset(x0, y1):], src.Pix[src.PixOffset(x1, y1):]
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

func writeTile(s Set, o GenOptions, src *placedSource, id ID) error {
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
