package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/internal/browser"
)

// pageState mirrors the page's pan and zoom arithmetic (web/index.html).
type pageState struct {
	x, y, s    int
	w, h       int
	mapW, mapH int
	scales     []int
}

func (p *pageState) clamp() {
	p.x = max(0, min(p.x, p.mapW-p.w*p.s))
	p.y = max(0, min(p.y, p.mapH-p.h*p.s))
	p.x -= p.x % p.s
	p.y -= p.y % p.s
}

func (p *pageState) pan(dx, dy int) {
	p.x += dx * p.s
	p.y += dy * p.s
	p.clamp()
}

func (p *pageState) zoom(dir int) {
	i := max(0, min(len(p.scales)-1, slices.Index(p.scales, p.s)+dir))
	cx, cy := p.x+p.w*p.s/2, p.y+p.h*p.s/2
	p.s = p.scales[i]
	p.x, p.y = cx-p.w*p.s/2, cy-p.h*p.s/2
	p.clamp()
}

// The page in headless Chromium, against serve --daemons 2 (the cluster
// loader, daemons over pcor), worked with real input events through the
// DevTools protocol: arrow keys, a mouse drag and the wheel. After each,
// the view shown is the one the page's arithmetic gives; the screenshot
// of the last equals the server's rendering of it; the tile labels sit
// inside the window without overlapping; the daemons are shown up.
func TestBrowserDrivesClusterViewer(t *testing.T) {
	if _, err := browser.Find(); err != nil {
		t.Skip(err)
	}
	mv, pr, set := programs(t)
	cmd := exec.Command(mv, "serve", "--daemons", "2", "--dir", set.Dir, "--addr", "127.0.0.1:0", "--window", "300x300", "--pcorrun", pr)
	url, _, lines := startServing(t, cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	b, err := browser.Launch(ctx, 420, 560)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d := pageDriver{b}
	if err := b.Navigate(ctx, url+"?x=0&y=0&s=8"); err != nil {
		t.Fatal(err)
	}
	first, err := d.waitView(ctx, 0)
	if err != nil {
		t.Fatalf("%v\n%s", err, lines())
	}
	st := pageState{x: 0, y: 0, s: 8, w: 300, h: 300, mapW: set.MapW(), mapH: set.MapH(), scales: set.Scales()}
	st.clamp()
	check := func(what string, v shownView, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, lines())
		}
		if v.X != st.x || v.Y != st.y || v.S != st.s {
			t.Fatalf("%s: the page shows (%d,%d) at 1:%d, want (%d,%d) at 1:%d", what, v.X, v.Y, v.S, st.x, st.y, st.s)
		}
		if !strings.Contains(v.Sources, "daemon ") {
			t.Errorf("%s: tiles from %q, not from the daemons", what, v.Sources)
		}
		t.Logf("%-12s (%d,%d) 1:%-2d shown %6.1f ms after the event (render %5.1f ms), tiles from %s", what, v.X, v.Y, v.S, v.Ms, v.RenderMs, v.Sources)
	}
	check("load", first, nil)

	v, err := d.do(ctx, d.key("ArrowRight"))
	st.pan(300/4, 0)
	check("key right", v, err)

	v, err = d.do(ctx, d.drag(150, 150, 90, 110))
	st.pan(60, 40)
	check("drag", v, err)

	v, err = d.do(ctx, d.wheel(150, 150, -120))
	st.zoom(-1)
	check("wheel in", v, err)

	v, err = d.do(ctx, d.key("ArrowDown"))
	st.pan(0, 300/4)
	check("key down", v, err)

	v, err = d.do(ctx, d.wheel(150, 150, 120))
	st.zoom(1)
	check("wheel out", v, err)

	// The screenshot's window is the server's rendering of that view.
	shot, err := b.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	want := fetchPNG(t, fmt.Sprintf("%srender?x=%d&y=%d&s=%d&w=300&h=300", url, st.x, st.y, st.s))
	if diff, spread := compareWindow(got, want); diff > 4 || spread < 40 {
		os.WriteFile(filepath.Join(t.TempDir(), "shot.png"), shot, 0o644)
		t.Errorf("screenshot vs the view: mean difference %.1f per channel, green spread %d (blank?)", diff, spread)
	}

	// Tile labels: inside the window, none over another.
	var box struct{ X, Y float64 }
	if err := b.Eval(ctx, `(() => { const r = document.getElementById("showsrc").getBoundingClientRect(); return {X: r.x + r.width/2, Y: r.y + r.height/2}; })()`, &box); err != nil {
		t.Fatal(err)
	}
	if err := b.Click(ctx, box.X, box.Y); err != nil {
		t.Fatal(err)
	}
	var labels []struct{ L, T, R, B float64 }
	deadline := time.Now().Add(2 * time.Minute)
	for len(labels) == 0 && time.Now().Before(deadline) {
		if err := b.Eval(ctx, `[...document.querySelectorAll("#overlay .src")].map(e => { const r = e.getBoundingClientRect(), w = document.getElementById("win").getBoundingClientRect(); return {L: r.left - w.left, T: r.top - w.top, R: r.right - w.left, B: r.bottom - w.top}; })`, &labels); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(labels) == 0 {
		t.Fatal("no tile labels shown")
	}
	for i, a := range labels {
		if a.L < 0 || a.T < 0 || a.R > 300.5 || a.B > 300.5 {
			t.Errorf("label %d at %+v sticks out of the 300x300 window", i, a)
		}
		for _, c := range labels[i+1:] {
			if a.L < c.R-0.5 && c.L < a.R-0.5 && a.T < c.B-0.5 && c.T < a.B-0.5 {
				t.Errorf("labels overlap: %+v and %+v", a, c)
			}
		}
	}

	// The daemons are listed up (the page polls /status).
	var status string
	deadline = time.Now().Add(2 * time.Minute)
	for !strings.Contains(status, "daemon 2 up") && time.Now().Before(deadline) {
		b.Eval(ctx, `document.getElementById("daemons").textContent`, &status)
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(status, "daemon 1 up") || !strings.Contains(status, "daemon 2 up") {
		t.Errorf("daemons on the page: %q", status)
	}
}

func fetchPNG(t *testing.T, url string) image.Image {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 {
		t.Fatalf("%s: %s %s", url, r.Status, body)
	}
	img, err := png.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// compareWindow is the mean difference per channel between want and the
// same area at the top-left of got, and the spread of got's green there.
func compareWindow(got, want image.Image) (float64, int) {
	var diff, n float64
	lo, hi := 255, 0
	wb, gb := want.Bounds(), got.Bounds()
	for y := 0; y < wb.Dy(); y++ {
		for x := 0; x < wb.Dx(); x++ {
			r1, g1, b1, _ := got.At(gb.Min.X+x, gb.Min.Y+y).RGBA()
			r2, g2, b2, _ := want.At(wb.Min.X+x, wb.Min.Y+y).RGBA()
			diff += absDiff(r1>>8, r2>>8) + absDiff(g1>>8, g2>>8) + absDiff(b1>>8, b2>>8)
			n += 3
			lo, hi = min(lo, int(g1>>8)), max(hi, int(g1>>8))
		}
	}
	return diff / n, hi - lo
}

func absDiff(a, b uint32) float64 {
	if a > b {
		return float64(a - b)
	}
	return float64(b - a)
}
