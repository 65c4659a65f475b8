package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/internal/browser"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/view"
)

// figuresMain regenerates the README's figures in one run: the Figure 5
// table on the paper's map, and the page's latencies in headless
// Chromium against serve --daemons 4 (cached pans, uncached wheel zooms).
// With --readme it writes them between the README's figure markers.
func figuresMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("figures", flag.ContinueOnError)
	dir := fs.String("dir", "", "tile set (default: the paper's procedural map in "+cacheDir()+")")
	reps := fs.Int("reps", 3, "renders per region and loader in the table")
	maxD := fs.Int("max-daemons", 4, "largest daemon count")
	minD := fs.Int("min-daemons", 1, "smallest daemon count of the table")
	throttledReps := fs.Int("throttled-reps", 5, "renders per strategy with one daemon throttled")
	pans := fs.Int("pans", 12, "cached pans and uncached zooms timed in the browser")
	readme := fs.String("readme", "", "README to write the figures into, between "+figBegin+" and "+figEnd)
	pcorrun := fs.String("pcorrun", "", "pcorrun binary (default: built with go build, else from $PATH)")
	only := fs.String("only", "", "measure only these parts, comma-separated: table, throttled, browser (default all; not with --readme)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	parts := map[string]bool{"table": true, "throttled": true, "browser": true}
	if *only != "" {
		if *readme != "" {
			return fmt.Errorf("figures: --only measures part of the figures; --readme writes them all")
		}
		clear(parts)
		for _, p := range strings.Split(*only, ",") {
			if p != "table" && p != "throttled" && p != "browser" {
				return fmt.Errorf("figures: --only %q: want table, throttled or browser", p)
			}
			parts[p] = true
		}
	}
	set, err := cachedSet(ctx, "figures", *dir, kindPaper, *maxD)
	if err != nil {
		return err
	}
	win := view.Window{W: 600, H: 600}
	var out bytes.Buffer
	w := io.MultiWriter(os.Stdout, &out)
	fmt.Fprintf(w, "$ go run ./examples/mapviewer figures   # %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	if parts["table"] {
		if err := paperTimes(ctx, w, set, win, max(1, *reps), *minD, *maxD, *pcorrun); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if parts["throttled"] {
		if err := throttledTimes(ctx, w, set, win, max(1, *throttledReps), *pcorrun); err != nil {
			if !errors.Is(err, errNoQuota) {
				return err
			}
			fmt.Fprintf(w, "throttled daemon not measured: %v\n", err)
		}
		fmt.Fprintln(w)
	}
	if parts["browser"] {
		if err := browserTimes(ctx, w, set, *maxD, max(1, *pans), *pcorrun); err != nil {
			if !errors.Is(err, browser.ErrNoChromium) {
				return err
			}
			fmt.Fprintf(w, "browser latencies not measured: %v\n", err)
		}
	}
	if *readme != "" {
		return writeFigures(*readme, out.String())
	}
	return nil
}

// The README's figures sit between these lines.
const (
	figBegin = "<!-- figures: go run ./examples/mapviewer figures --readme examples/mapviewer/README.md -->"
	figEnd   = "<!-- end of figures -->"
)

func writeFigures(path, figs string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, figBegin), strings.Index(s, figEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q ... %q lines", path, figBegin, figEnd)
	}
	s = s[:i+len(figBegin)] + "\n\n```\n" + strings.TrimSpace(figs) + "\n```\n\n" + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// browserTimes starts serve --daemons n under pcorrun on set and times,
// in headless Chromium, from input event to image on screen: pans with
// the arrow keys over views already cached, and wheel zooms from the
// whole map into an uncached 1:10 view (the cache emptied before each).
func browserTimes(ctx context.Context, w io.Writer, set tiles.Set, n, reps int, pcorrunBin string) error {
	if _, err := browser.Find(); err != nil {
		return err
	}
	self, bin, err := launchBinaries(ctx, pcorrunBin)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	served := make(chan error, 1)
	go func() {
		prog := []string{self, "serve", "--dir", set.Dir, "--addr", "127.0.0.1:0", "--window", "600x600", "--allow-cache-drop"}
		served <- runPcorrun(ctx, bin, n+1, nil, prog, pw, os.Stderr)
		pw.Close()
	}()
	urlc := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`map viewer on (http://\S+)`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				urlc <- m[1]
			}
		}
		io.Copy(io.Discard, pr)
	}()
	var url string
	select {
	case url = <-urlc:
	case err := <-served:
		return fmt.Errorf("serve --daemons %d: %v", n, err)
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("serve --daemons %d: no address within 2 minutes", n)
	}
	defer func() {
		cancel()
		<-served
	}()
	b, err := browser.Launch(ctx, 620, 720)
	if err != nil {
		return err
	}
	defer b.Close()
	d := pageDriver{b}
	lm := startLoad()
	// Cached pans at 1:4: the views right of (0,0) are seen once, then
	// panned over again, and only those served wholly from the cache count.
	if err := b.Navigate(ctx, url+"?x=0&y=0&s=4"); err != nil {
		return err
	}
	if _, err := d.waitView(ctx, 0); err != nil {
		return err
	}
	var cached, render []float64
	var steps []viewSteps
	for _, k := range []string{"ArrowRight", "ArrowRight", "ArrowRight", "ArrowRight"} {
		if _, err := d.do(ctx, d.key(k)); err != nil {
			return err
		}
	}
	for len(cached) < reps {
		for _, k := range []string{"ArrowLeft", "ArrowLeft", "ArrowLeft", "ArrowLeft", "ArrowRight", "ArrowRight", "ArrowRight", "ArrowRight"} {
			v, err := d.do(ctx, d.key(k))
			if err != nil {
				return err
			}
			if v.Cached && len(cached) < reps {
				cached, render = append(cached, v.Ms), append(render, v.RenderMs)
				steps = append(steps, v.Steps)
			}
		}
	}
	// Uncached zooms: the whole map at 1:16, the cache emptied, the wheel
	// turned up once over the window (to 1:10).
	if err := b.Navigate(ctx, url+"?x=0&y=0&s=16"); err != nil {
		return err
	}
	if _, err := d.waitView(ctx, 0); err != nil {
		return err
	}
	var zoom, zrender []float64
	var zsteps []viewSteps
	zoomTiles := 0
	for range reps {
		if err := dropCache(ctx, url); err != nil {
			return err
		}
		v, err := d.do(ctx, d.wheel(300, 300, -120))
		if err != nil {
			return err
		}
		if v.S != 10 || v.Cached {
			return fmt.Errorf("wheel zoom from 1:16 showed 1:%d (cached %v), want an uncached 1:10 view", v.S, v.Cached)
		}
		zoom, zrender = append(zoom, v.Ms), append(zrender, v.RenderMs)
		zsteps = append(zsteps, v.Steps)
		zoomTiles = countTiles(v.Sources)
		if _, err := d.do(ctx, d.wheel(300, 300, 120)); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "browser (headless Chromium, real input events through the DevTools protocol) against serve --daemons %d, 600x600 window (%s);\n", n, lm.stop())
	fmt.Fprintf(w, "time from the input event to the image on screen, median [lowest-highest] of %d (server render time in brackets):\n", reps)
	fmt.Fprintf(w, "  cached pan at 1:4 (arrow key):            %s (render %s)\n", spread(cached), spread(render))
	fmt.Fprintf(w, "  uncached wheel zoom 1:16 -> 1:10 (%d tiles): %s (render %s)\n", zoomTiles, spread(zoom), spread(zrender))
	fmt.Fprintf(w, "where the time goes, medians (ms): event to request, to response headers (server render), body (PNG encoding, transfer), image decoding, to the frame shown:\n")
	fmt.Fprintf(w, "  cached pan:    %s\n", stepMedians(steps))
	fmt.Fprintf(w, "  uncached zoom: %s\n", stepMedians(zsteps))
	return nil
}

// stepMedians prints the median of each step of views' times.
func stepMedians(vs []viewSteps) string {
	col := func(f func(viewSteps) float64) float64 {
		xs := make([]float64, len(vs))
		for i, v := range vs {
			xs[i] = f(v)
		}
		return medianF(xs)
	}
	return fmt.Sprintf("%.1f + %.1f + %.1f + %.1f + %.1f",
		col(func(v viewSteps) float64 { return v.ToRequest }), col(func(v viewSteps) float64 { return v.ToHeaders }),
		col(func(v viewSteps) float64 { return v.Body }), col(func(v viewSteps) float64 { return v.Decode }),
		col(func(v viewSteps) float64 { return v.ToScreen }))
}

func dropCache(ctx context.Context, base string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"cache/drop", nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	r.Body.Close()
	if r.StatusCode != http.StatusNoContent {
		return fmt.Errorf("POST /cache/drop: %s", r.Status)
	}
	return nil
}

// countTiles adds up the counts of an X-Sources header ("daemon 1=20; ...").
func countTiles(sources string) int {
	n := 0
	for _, p := range strings.Split(sources, "; ") {
		var k int
		if _, v, ok := strings.Cut(p, "="); ok {
			if _, err := fmt.Sscan(v, &k); err == nil {
				n += k
			}
		}
	}
	return n
}

// spread is "43.1 ms [38.0-60.2]".
func spread(ms []float64) string {
	s := slices.Clone(ms)
	slices.Sort(s)
	return fmt.Sprintf("%.1f ms [%.1f-%.1f]", s[len(s)/2], s[0], s[len(s)-1])
}
