package tiles

import (
	"image"
	"image/color"
	"math"
)

// Procedural map: fractal value noise gives a height field, coloured as
// sea, beach, lowland, hills and snow. Everything is a function of map
// coordinates, so tiles drawn independently meet without seams.

const (
	terrainStep   = 4    // heights are computed every terrainStep pixels and interpolated
	terrainBase   = 2400 // wavelength of the largest feature, in pixels
	terrainOctave = 5
)

func hash2(x, y, o int64) uint64 {
	h := uint64(x)*0x9E3779B97F4A7C15 ^ uint64(y)*0xC2B2AE3D27D4EB4F ^ uint64(o)*0x165667B19E3779F9
	h ^= h >> 31
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 29
	h *= 0x94D049BB133111EB
	h ^= h >> 32
	return h
}

func lattice(x, y, o int64) float64 { return float64(hash2(x, y, o)>>11) / (1 << 53) }

func smooth(t float64) float64 { return t * t * (3 - 2*t) }

// height is the terrain height in [0, 1) at map pixel (x, y).
func height(x, y float64) float64 {
	var sum, amp, norm float64 = 0, 1, 0
	wl := float64(terrainBase)
	for o := int64(0); o < terrainOctave; o++ {
		fx, fy := x/wl, y/wl
		ix, iy := math.Floor(fx), math.Floor(fy)
		tx, ty := smooth(fx-ix), smooth(fy-iy)
		a, b := lattice(int64(ix), int64(iy), o), lattice(int64(ix)+1, int64(iy), o)
		c, d := lattice(int64(ix), int64(iy)+1, o), lattice(int64(ix)+1, int64(iy)+1, o)
		top, bot := a+(b-a)*tx, c+(d-c)*tx
		sum += amp * (top + (bot-top)*ty)
		norm += amp
		amp *= 0.5
		wl /= 2
	}
	return sum / norm
}

type stop struct {
	h float64
	c [3]float64
}

var palette = []stop{
	{0.00, [3]float64{8, 30, 90}},
	{0.46, [3]float64{40, 110, 180}},
	{0.48, [3]float64{215, 200, 145}},
	{0.50, [3]float64{80, 150, 70}},
	{0.60, [3]float64{50, 115, 45}},
	{0.68, [3]float64{125, 105, 75}},
	{0.74, [3]float64{150, 140, 130}},
	{0.78, [3]float64{240, 240, 245}},
	{1.00, [3]float64{255, 255, 255}},
}

func terrainColor(h float64) [3]float64 {
	for i := 1; i < len(palette); i++ {
		if h <= palette[i].h {
			a, b := palette[i-1], palette[i]
			t := (h - a.h) / (b.h - a.h)
			return [3]float64{a.c[0] + (b.c[0]-a.c[0])*t, a.c[1] + (b.c[1]-a.c[1])*t, a.c[2] + (b.c[2]-a.c[2])*t}
		}
	}
	return palette[len(palette)-1].c
}

// drawTerrain fills img, whose pixel (0,0) is map pixel origin, with the
// procedural terrain.
func drawTerrain(img *image.RGBA, origin image.Point) {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	gw, gh := w/terrainStep+2, h/terrainStep+2
	grid := make([]float64, gw*gh)
	for gy := 0; gy < gh; gy++ {
		for gx := 0; gx < gw; gx++ {
			grid[gy*gw+gx] = height(float64(origin.X+gx*terrainStep), float64(origin.Y+gy*terrainStep))
		}
	}
	for y := 0; y < h; y++ {
		gy, ty := y/terrainStep, float64(y%terrainStep)/terrainStep
		for x := 0; x < w; x++ {
			gx, tx := x/terrainStep, float64(x%terrainStep)/terrainStep
			a, b := grid[gy*gw+gx], grid[gy*gw+gx+1]
			c, d := grid[(gy+1)*gw+gx], grid[(gy+1)*gw+gx+1]
			top, bot := a+(b-a)*tx, c+(d-c)*tx
			hv := top + (bot-top)*ty
			col := terrainColor(hv)
			// Fine texture, so the tiles compress like photographs.
			n := float64(hash2(int64(origin.X+x), int64(origin.Y+y), 99)%13) - 6
			img.SetRGBA(x, y, color.RGBA{clamp8(col[0] + n), clamp8(col[1] + n), clamp8(col[2] + n), 255})
		}
	}
}

func clamp8(v float64) uint8 {
	switch {
	case v <= 0:
		return 0
	case v >= 255:
		return 255
	}
	return uint8(v + 0.5)
}
