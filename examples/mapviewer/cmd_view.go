package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/cluster"
	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/view"
)

func parseWindow(s string) (view.Window, error) {
	a, b, ok := strings.Cut(s, "x")
	w, err1 := strconv.Atoi(a)
	h, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return view.Window{}, fmt.Errorf("bad window %q (want WxH)", s)
	}
	return view.Window{W: w, H: h}, nil
}

func parseRegion(s string) (view.Region, error) {
	f := strings.Split(s, ",")
	if len(f) != 4 {
		return view.Region{}, fmt.Errorf("bad region %q (want x,y,w,h)", s)
	}
	var v [4]int
	for i, x := range f {
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return view.Region{}, fmt.Errorf("bad region %q: %v", s, err)
		}
		v[i] = n
	}
	return view.Region{X: v[0], Y: v[1], W: v[2], H: v[3]}, nil
}

func viewMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("view", flag.ContinueOnError)
	dir := fs.String("dir", "mapdata", "tile set directory")
	region := fs.String("region", "", "region x,y,w,h in map pixels (default: the whole map)")
	paper := fs.Int("paper", 0, "render the paper's region 1..7 (1:1, 1:2, 1:4, 1:5, 1:8, 1:10, 1:16)")
	winS := fs.String("window", "600x600", "window size")
	out := fs.String("out", "view.png", "PNG to write")
	daemons := fs.Int("daemons", 0, "load through this many daemon processes over pcor (0: local threads)")
	times := fs.Bool("paper-times", false, "time the seven paper regions with the local loader and 1..4 daemons")
	reps := fs.Int("reps", 3, "repetitions per measurement (--paper-times; the median is shown)")
	maxD := fs.Int("max-daemons", 4, "largest daemon count for --paper-times")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	set, err := tiles.Open(*dir)
	if err != nil {
		return err
	}
	win, err := parseWindow(*winS)
	if err != nil {
		return err
	}
	if *times {
		return paperTimes(ctx, set, win, max(1, *reps), *maxD)
	}
	r := view.Region{W: set.MapW(), H: set.MapH()}
	switch {
	case *paper != 0:
		prs := view.PaperRegions(set, win)
		if *paper < 1 || *paper > len(prs) {
			return fmt.Errorf("--paper %d: regions are 1..%d", *paper, len(prs))
		}
		r = prs[*paper-1].Region
	case *region != "":
		if r, err = parseRegion(*region); err != nil {
			return err
		}
	}
	p, err := view.Fit(set, r, win)
	if err != nil {
		return err
	}
	var l loader.Loader = loader.NewLocal(set, 0)
	kind := "local threads"
	if *daemons > 0 {
		c, err := cluster.Start(ctx, set, selfCommand, cluster.Options{Daemons: *daemons})
		if err != nil {
			return err
		}
		defer c.Close()
		l, kind = c.Loader, fmt.Sprintf("%d daemons", len(c.Daemons))
	}
	res, rerr := view.Render(ctx, l, p)
	if res == nil {
		return rerr
	}
	if err := writePNG(*out, res.Img); err != nil {
		return err
	}
	fmt.Printf("%s: region %v at 1:%d, %d tiles, %dx%d, %s, %v\n", *out, p.Region, p.Scale, len(p.Tiles), p.Size.X, p.Size.Y, kind, res.Elapsed.Round(time.Microsecond))
	return rerr
}

func writePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// timeView renders p reps times and returns the median time and the image.
func timeView(ctx context.Context, l loader.Loader, p view.Plan, reps int) (time.Duration, []byte, error) {
	var ds []time.Duration
	var pix []byte
	for range reps {
		res, err := view.Render(ctx, l, p)
		if err != nil {
			return 0, nil, err
		}
		ds = append(ds, res.Elapsed)
		pix = res.Img.Pix
	}
	slices.Sort(ds)
	return ds[len(ds)/2], pix, nil
}

// paperTimes is the analogue of the paper's Figure 5.
func paperTimes(ctx context.Context, set tiles.Set, win view.Window, reps, maxDaemons int) error {
	prs := view.PaperRegions(set, win)
	plans := make([]view.Plan, len(prs))
	for i, pr := range prs {
		var err error
		if plans[i], err = view.Fit(set, pr.Region, win); err != nil {
			return err
		}
	}
	local := loader.NewLocal(set, 0)
	lt := make([]time.Duration, len(plans))
	lpix := make([][]byte, len(plans))
	for i, p := range plans {
		var err error
		if lt[i], lpix[i], err = timeView(ctx, local, p, reps); err != nil {
			return err
		}
	}
	ct := make([][]time.Duration, maxDaemons)
	tmp, err := os.MkdirTemp("", "mapviewer-paper-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for k := 1; k <= maxDaemons; k++ {
		ks, err := tiles.Relayout(set, fmt.Sprintf("%s/%d", tmp, k), k, 1)
		if err != nil {
			return err
		}
		c, err := cluster.Start(ctx, ks, selfCommand, cluster.Options{})
		if err != nil {
			return err
		}
		for i, p := range plans {
			p.Set = ks
			d, pix, err := timeView(ctx, c.Loader, p, reps)
			if err != nil {
				c.Close()
				return err
			}
			if string(pix) != string(lpix[i]) {
				c.Close()
				return errors.New("cluster view differs from the local view for " + prs[i].Name)
			}
			ct[k-1] = append(ct[k-1], d)
		}
		c.Close()
	}
	fmt.Printf("paper regions in a %dx%d window, median of %d, time in ms (ratio to local); cluster pixels equal local\n", win.W, win.H, reps)
	fmt.Printf("%-6s %6s %10s", "region", "tiles", "local")
	for k := 1; k <= maxDaemons; k++ {
		fmt.Printf(" %16s", fmt.Sprintf("%d daemon(s)", k))
	}
	fmt.Println()
	for i, p := range plans {
		fmt.Printf("%-6s %6d %10.1f", prs[i].Name, len(p.Tiles), ms(lt[i]))
		for k := range maxDaemons {
			fmt.Printf(" %9.1f (%.2fx)", ms(ct[k][i]), float64(ct[k][i])/float64(lt[i]))
		}
		fmt.Println()
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
