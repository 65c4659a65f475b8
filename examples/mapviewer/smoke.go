package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/view"
)

// smokeRun checks the viewer end to end and prints its figures: the
// paper's largest view (region R7, every tile of the map) rendered by
// the viewer's loader and by local threads in turn, pixels compared;
// that view over HTTP with a cold cache; then pans over views already
// seen, served from the fragment cache.
func smokeRun(ctx context.Context, base string, set tiles.Set, win view.Window, l loader.Loader, reps int, kind string) error {
	prs := view.PaperRegions(set, win)
	pr := prs[len(prs)-1]
	p, err := view.Fit(set, pr.Region, win)
	if err != nil {
		return err
	}
	local := loader.NewLocal(set, 0)
	var lt, ct []time.Duration
	for range reps {
		ld, lpix, err := timeView(ctx, local, p, 1)
		if err != nil {
			return fmt.Errorf("local loader: %w", err)
		}
		cd, cpix, err := timeView(ctx, l, p, 1)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		if string(lpix) != string(cpix) {
			return fmt.Errorf("%s: view %s differs from the local loader's", kind, pr.Name)
		}
		lt, ct = append(lt, ld), append(ct, cd)
	}
	lm, cm := median(lt), median(ct)
	fmt.Printf("smoke: %d-tile view (paper region %s in %dx%d): %s %.1f ms, local threads %.1f ms, cluster/local %.2fx (median of %d, same pixels)\n",
		len(p.Tiles), pr.Name, p.Size.X, p.Size.Y, kind, ms(cm), ms(lm), float64(cm)/float64(lm), reps)

	c := &http.Client{Timeout: 2 * time.Minute}
	q := func(x, y, s int) string { return fmt.Sprintf("x=%d&y=%d&s=%d&w=%d&h=%d", x, y, s, win.W, win.H) }
	first, hdr, err := get(ctx, c, base, q(0, 0, p.Scale))
	if err != nil {
		return err
	}
	fmt.Printf("smoke: same view over HTTP, cold cache: %.1f ms (render %s ms, tiles from %s)\n", ms(first), hdr.Get("X-Render-Ms"), hdr.Get("X-Sources"))

	const s = 4
	span := win.W * s
	if 2*span > set.MapW() || win.H*s > set.MapH() {
		return fmt.Errorf("map %dx%d too small for the pan test at 1:%d in %dx%d", set.MapW(), set.MapH(), s, win.W, win.H)
	}
	for _, x := range []int{0, span} { // the views the pans stay within
		if _, _, err := get(ctx, c, base, q(x, 0, s)); err != nil {
			return err
		}
	}
	var pans []time.Duration
	for range 3 {
		for _, x := range []int{span / 4, span / 2, 3 * span / 4} {
			d, hdr, err := get(ctx, c, base, q(x, 0, s))
			if err != nil {
				return err
			}
			for _, src := range strings.Split(hdr.Get("X-Sources"), "; ") {
				if !strings.HasPrefix(src, "cache") {
					return fmt.Errorf("pan to x=%d: tiles not all from the cache: %s", x, hdr.Get("X-Sources"))
				}
			}
			pans = append(pans, d)
		}
	}
	fmt.Printf("smoke: cached pan at 1:%d in %dx%d over HTTP: median %.1f ms, max %.1f ms (%d pans)\n",
		s, win.W, win.H, ms(median(pans)), ms(slices.Max(pans)), len(pans))
	fmt.Println("smoke: ok")
	return nil
}

// get fetches one view and returns the time until its last byte.
func get(ctx context.Context, c *http.Client, base, query string) (time.Duration, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"render?"+query, nil)
	if err != nil {
		return 0, nil, err
	}
	start := time.Now()
	r, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer r.Body.Close()
	body, err := io.ReadAll(r.Body)
	d := time.Since(start)
	if err != nil {
		return 0, nil, err
	}
	if r.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("GET /render?%s: %s: %s", query, r.Status, body)
	}
	if e := r.Header.Get("X-Tile-Errors"); e != "" {
		return 0, nil, fmt.Errorf("GET /render?%s: tiles failed: %s", query, e)
	}
	return d, r.Header, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
