package web

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/view"
)

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// pageState mirrors the page's pan and zoom arithmetic (index.html).
type pageState struct {
	x, y, s int
	w, h    int
	mapW    int
	mapH    int
	scales  []int
}

func (p *pageState) clamp() {
	p.x = max(0, min(p.x, p.mapW-p.w*p.s))
	p.y = max(0, min(p.y, p.mapH-p.h*p.s))
	p.x -= p.x % p.s
	p.y -= p.y % p.s
}

func (p *pageState) apply(op string) {
	switch op {
	case "right":
		p.x += p.w / 4 * p.s
	case "left":
		p.x -= p.w / 4 * p.s
	case "down":
		p.y += p.h / 4 * p.s
	case "up":
		p.y -= p.h / 4 * p.s
	case "in", "out":
		d := -1
		if op == "out" {
			d = 1
		}
		i := max(0, min(len(p.scales)-1, slices.Index(p.scales, p.s)+d))
		cx, cy := p.x+p.w*p.s/2, p.y+p.h*p.s/2
		p.s = p.scales[i]
		p.x, p.y = cx-p.w*p.s/2, cy-p.h*p.s/2
	}
	p.clamp()
}

// TestBrowserPanZoom loads the viewer in headless Chromium with a query
// that pans and zooms, and checks the screenshot shows the expected view.
func TestBrowserPanZoom(t *testing.T) {
	chrome := findChromium()
	if chrome == "" {
		t.Skip("chromium not installed (apt-get install chromium)")
	}
	srv := newServer(t)
	var mu sync.Mutex
	var plans []view.Plan
	srv.OnRender = func(p view.Plan) {
		mu.Lock()
		plans = append(plans, p)
		mu.Unlock()
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	ops := []string{"right", "down", "in", "right"}
	st := pageState{x: 0, y: 0, s: 8, w: 300, h: 300, mapW: srv.Set.MapW(), mapH: srv.Set.MapH(), scales: srv.Set.Scales()}
	st.clamp()
	for _, op := range ops {
		st.apply(op)
	}
	url := ts.URL + "/?x=0&y=0&s=8&ops=right,down,in,right"

	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chrome, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
		"--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"), "--hide-scrollbars",
		"--force-device-scale-factor=1", "--window-size=400,480", "--virtual-time-budget=15000",
		"--screenshot="+shot, url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%.2000s", err, out)
	}
	f, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%.2000s", err, out)
	}
	got, err := decodePNG(f)
	if err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(plans) == 0 {
		t.Fatal("the page rendered no view")
	}
	last := plans[len(plans)-1]
	if last.Region.X != st.x || last.Region.Y != st.y || last.Scale != st.s {
		t.Fatalf("page asked for (%d,%d) at 1:%d, want (%d,%d) at 1:%d after %v",
			last.Region.X, last.Region.Y, last.Scale, st.x, st.y, st.s, ops)
	}
	res, err := view.Render(context.Background(), srv.Loader, last)
	if err != nil {
		t.Fatal(err)
	}
	want := res.Img
	// The map window is at the page's top-left corner.
	var diff, n float64
	var lo, hi uint8 = 255, 0
	for y := 0; y < want.Rect.Dy(); y++ {
		for x := 0; x < want.Rect.Dx(); x++ {
			r, g, b, _ := got.At(got.Bounds().Min.X+x, got.Bounds().Min.Y+y).RGBA()
			w := want.RGBAAt(x, y)
			diff += absd(float64(r>>8), float64(w.R)) + absd(float64(g>>8), float64(w.G)) + absd(float64(b>>8), float64(w.B))
			n += 3
			lo, hi = min(lo, uint8(g>>8)), max(hi, uint8(g>>8))
		}
	}
	if hi-lo < 40 {
		t.Errorf("screenshot looks blank (green channel %d..%d)", lo, hi)
	}
	mean := diff / n
	t.Logf("view (%d,%d) at 1:%d; screenshot vs expected: mean difference %.2f per channel", st.x, st.y, st.s, mean)
	if mean > 4 {
		t.Errorf("screenshot differs from the expected view: mean difference %.1f per channel", mean)
		os.WriteFile(filepath.Join(os.TempDir(), "mapviewer-browser-shot.png"), f, 0o644)
	}
}

func absd(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}
