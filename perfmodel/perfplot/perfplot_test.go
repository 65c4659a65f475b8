package perfplot

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pcor-go/pcor/perfmodel"
)

// TestPlot fits a line, draws the measured points beside the model's
// curve as SVG and PNG, and checks the files are what their extension
// says, with both legend labels in the SVG.
func TestPlot(t *testing.T) {
	var obs []perfmodel.Observation
	for n := 1.0; n <= 8; n++ {
		obs = append(obs, perfmodel.Observation{N: n, T: 3 + 2*n + 0.01*math.Sin(n)})
	}
	m, err := perfmodel.Fit(perfmodel.Linear(), obs, perfmodel.Absolute)
	if err != nil {
		t.Fatal(err)
	}
	pts := Series{Name: "measured", Points: true}
	for _, o := range obs {
		pts.X, pts.Y = append(pts.X, o.N), append(pts.Y, o.T)
	}
	curve := Curve("model", m, 0, 1, 8, 20)
	if len(curve.X) != 21 || curve.X[0] != 1 || curve.X[20] != 8 {
		t.Fatalf("Curve sampled x = %v, want 21 points from 1 to 8", curve.X)
	}
	if want := m.Predict(8, 0).T; curve.Y[20] != want {
		t.Errorf("Curve(8) = %v, model predicts %v", curve.Y[20], want)
	}
	dir := t.TempDir()
	svg := filepath.Join(dir, "fit.svg")
	if err := Plot(svg, "loop", "n", "s", pts, curve); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("<svg")) || !strings.Contains(string(b), "measured") || !strings.Contains(string(b), "model") {
		t.Errorf("%s is not an SVG with both legend labels (%d bytes)", svg, len(b))
	}
	png := filepath.Join(dir, "fit.png")
	if err := Plot(png, "loop", "n", "s", pts, curve); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("%s is not a PNG: %v", png, err)
	}
	if err := Plot(filepath.Join(dir, "bad.svg"), "bad", "n", "s", Series{X: []float64{1}}); err == nil {
		t.Error("mismatched series plotted")
	}
	if err := Plot(filepath.Join(dir, "fit.xyz"), "loop", "n", "s", pts); err == nil {
		t.Error("unknown extension accepted")
	}
}
