package web

import (
	"context"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/view"
)

var (
	setOnce sync.Once
	testSet tiles.Set
	setErr  error
	setDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if setDir != "" {
		os.RemoveAll(setDir)
	}
	os.Exit(code)
}

// smallSet is the paper's grid with 320x240 tiles (a 4800x4800 map).
func smallSet(tb testing.TB) tiles.Set {
	tb.Helper()
	setOnce.Do(func() {
		setDir, setErr = os.MkdirTemp("", "mapviewer-web-")
		if setErr != nil {
			return
		}
		o := tiles.DefaultGenOptions(setDir)
		o.TileW, o.TileH = 320, 240
		testSet, setErr = tiles.Generate(context.Background(), o)
	})
	if setErr != nil {
		tb.Fatal(setErr)
	}
	return testSet
}

func newServer(tb testing.TB) *Server {
	s := smallSet(tb)
	// A loaded machine under the race detector takes minutes for a view.
	return &Server{Set: s, Loader: loader.NewCache(loader.NewLocal(s, 0), 64<<20), Window: view.Window{W: 300, H: 300}, Kind: "local", RenderTimeout: 10 * time.Minute}
}

func TestBadRequests(t *testing.T) {
	srv := newServer(t)
	for _, q := range []string{
		"", "x=0&y=0", "x=-1&y=0&s=4", "x=0&y=-5&s=4", "x=0&y=0&s=0", "x=0&y=0&s=3",
		"x=0&y=0&s=4&w=100000", "x=0&y=0&s=4&w=-3", "x=99999999999999999999&y=0&s=4",
		"x=abc&y=0&s=4", "x=4800&y=0&s=4", "x=0&y=0&s=1&w=4096&h=4096&extra=1", "x=0&y=0&s=1&w=2049&h=600", "x=0&y=0&s=1000000000",
	} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", "/render?"+q, nil))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "bad request") {
			t.Errorf("%q: %d %.200q, want 400 with a message", q, rec.Code, rec.Body.String())
		}
	}
}

// A bad value is named in the 400, not sent back whole.
func TestBadRequestDoesNotEchoHugeValue(t *testing.T) {
	srv := newServer(t)
	huge := strings.Repeat("9z", 100<<10)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/render?x="+huge+"&y=0&s=4", nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "x=") {
		t.Fatalf("%d %.200q, want 400 naming x", rec.Code, rec.Body.String())
	}
	if n := rec.Body.Len(); n > 512 {
		t.Errorf("400 body is %d bytes for a %d-byte value: %.200q", n, len(huge), rec.Body.String())
	}
}

func TestRenderAndIndex(t *testing.T) {
	srv := newServer(t)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/render?x=0&y=0&s=16", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/png" {
		t.Fatalf("render: %d %.200q", rec.Code, rec.Body.String())
	}
	img, err := png.Decode(rec.Body)
	if err != nil || img.Bounds().Dx() != 300 || img.Bounds().Dy() != 300 {
		t.Fatalf("png %v %v", img.Bounds(), err)
	}
	if got := rec.Header().Get("X-Sources"); got != "local=300" {
		t.Errorf("X-Sources %q, want local=300", got)
	}
	if n := strings.Count(rec.Header().Get("X-Tiles"), ";") + 1; n != 300 {
		t.Errorf("X-Tiles lists %d tiles", n)
	}
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/render?x=0&y=0&s=16", nil))
	if got := rec.Header().Get("X-Sources"); got != "cache (local)=300" {
		t.Errorf("second view X-Sources %q, want all from the cache", got)
	}
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"MapW":4800`) {
		t.Errorf("index: %d", rec.Code)
	}
}

func TestRenderNamesBrokenTile(t *testing.T) {
	dir := t.TempDir()
	o := tiles.DefaultGenOptions(dir)
	o.Cols, o.Rows, o.TileW, o.TileH = 2, 2, 80, 80
	s, err := tiles.Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	bad := tiles.ID{Col: 1, Row: 0}
	if err := writeGarbage(s.Path(bad, 0)); err != nil {
		t.Fatal(err)
	}
	srv := &Server{Set: s, Loader: loader.NewLocal(s, 0)}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/render?x=0&y=0&s=1", nil))
	if rec.Code != 200 || !strings.Contains(rec.Header().Get("X-Tile-Errors"), bad.Name()) {
		t.Errorf("broken tile: %d, X-Tile-Errors %q", rec.Code, rec.Header().Get("X-Tile-Errors"))
	}
	if !strings.Contains(rec.Header().Get("X-Sources"), "failed=1") {
		t.Errorf("X-Sources %q", rec.Header().Get("X-Sources"))
	}
}

// BenchmarkCachedPan pans across a region whose fragments are cached:
// the latency of a view the user already saw part of.
func BenchmarkCachedPan(b *testing.B) {
	srv := newServer(b)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	get := func(q string) {
		r, err := http.Get(ts.URL + "/render?" + q)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			b.Fatal(r.Status)
		}
	}
	get("x=0&y=0&s=4&w=600&h=600")
	get("x=2400&y=0&s=4&w=600&h=600")
	qs := []string{"x=600&y=0&s=4&w=600&h=600", "x=1200&y=0&s=4&w=600&h=600", "x=1800&y=0&s=4&w=600&h=600"}
	i := 0
	for b.Loop() {
		get(qs[i%len(qs)])
		i++
	}
}
