package tiles

import (
	"image"
	"image/color"
)

// glyphs is a 5x7 bitmap font with the characters tile labels use.
var glyphs = map[rune][7]string{
	'0': {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."},
	'1': {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'2': {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"},
	'3': {"####.", "....#", "....#", ".###.", "....#", "....#", "####."},
	'4': {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."},
	'5': {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
	'6': {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."},
	'7': {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
	'8': {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."},
	'9': {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."},
	'R': {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"},
	'C': {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."},
	' ': {".....", ".....", ".....", ".....", ".....", ".....", "....."},
}

// textSize is the size in pixels of s drawn at scale k.
func textSize(s string, k int) image.Point {
	n := len([]rune(s))
	return image.Pt((n*6-1)*k, 7*k)
}

// drawText draws s with its top-left corner at p, each font pixel a k x k
// square of colour c.
func drawText(img *image.RGBA, p image.Point, s string, k int, c color.RGBA) {
	x := p.X
	for _, ch := range s {
		g, ok := glyphs[ch]
		if !ok {
			g = glyphs[' ']
		}
		for gy, row := range g {
			for gx, on := range row {
				if on != '#' {
					continue
				}
				r := image.Rect(x+gx*k, p.Y+gy*k, x+gx*k+k, p.Y+gy*k+k).Intersect(img.Rect)
				for y := r.Min.Y; y < r.Max.Y; y++ {
					for xx := r.Min.X; xx < r.Max.X; xx++ {
						img.SetRGBA(xx, y, c)
					}
				}
			}
		}
		x += 6 * k
	}
}
