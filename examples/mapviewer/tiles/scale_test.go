package tiles

import (
	"context"
	"image"
	"image/draw"
	"math/rand/v2"
	"testing"
)

// A YCbCr image (what JPEG decodes to) reduced from its planes equals the
// reduction of its RGBA conversion by image/draw, for every chroma
// subsampling, partial blocks at the edges included.
func TestDownscaleYCbCrEqualsRGBA(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ratios := []image.YCbCrSubsampleRatio{
		image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio422, image.YCbCrSubsampleRatio420,
		image.YCbCrSubsampleRatio440, image.YCbCrSubsampleRatio411, image.YCbCrSubsampleRatio410,
	}
	for _, r := range ratios {
		for _, sz := range []image.Point{{37, 23}, {64, 48}, {5, 3}} {
			yc := image.NewYCbCr(image.Rect(0, 0, sz.X, sz.Y), r)
			for _, p := range [][]byte{yc.Y, yc.Cb, yc.Cr} {
				for i := range p {
					p[i] = uint8(rng.UintN(256))
				}
			}
			rgba := image.NewRGBA(yc.Rect)
			draw.Draw(rgba, rgba.Rect, yc, image.Point{}, draw.Src)
			for _, n := range []int{2, 3, 4, 16} {
				want := Downscale(rgba, n)
				got := Downscale(yc, n)
				if got.Rect != want.Rect || string(got.Pix) != string(want.Pix) {
					t.Errorf("%v %v 1:%d: reduced from the planes differs from the RGBA reduction", r, sz, n)
				}
			}
		}
	}
}

// LoadScaledTo puts the pixels in the buffer it is given (no copy after
// it) and they equal LoadScaled's; a buffer too small is not used.
func TestLoadScaledToBuffer(t *testing.T) {
	o := DefaultGenOptions(t.TempDir())
	o.Cols, o.Rows, o.TileW, o.TileH, o.Nodes, o.Replicas = 2, 1, 160, 120, 1, 1
	s, err := Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 4} {
		want, err := s.LoadScaled(ID{1, 0}, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(want.Pix)+7)
		got, err := s.LoadScaledTo(ID{1, 0}, 0, n, buf)
		if err != nil {
			t.Fatal(err)
		}
		if &got.Pix[0] != &buf[0] || string(got.Pix) != string(want.Pix) {
			t.Errorf("1:%d: pixels not in the buffer given, or not LoadScaled's", n)
		}
		small, err := s.LoadScaledTo(ID{1, 0}, 0, n, make([]byte, 10))
		if err != nil || string(small.Pix) != string(want.Pix) {
			t.Errorf("1:%d with a small buffer: %v", n, err)
		}
	}
}
