package main

import (
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

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
	dir := fs.String("dir", "", "tile set directory (default: the demo's set in "+cacheDir()+", or with --paper-times the paper's procedural map there; generated if absent)")
	region := fs.String("region", "", "region x,y,w,h in map pixels (default: the whole map)")
	paper := fs.Int("paper", 0, "render the paper's region 1..7 (1:1, 1:2, 1:4, 1:5, 1:8, 1:10, 1:16)")
	winS := fs.String("window", "600x600", "window size")
	out := fs.String("out", "view.png", "PNG to write")
	daemons := fs.Int("daemons", 0, "load through this many daemon processes started by pcorrun (0: local threads; ignored under pcorrun)")
	times := fs.Bool("paper-times", false, "time the seven paper regions with the local loader and 1..max-daemons daemons under pcorrun")
	throttled := fs.Bool("throttled", false, "time the largest paper region through 4 daemons (2 replicas), the last limited to 25% of a CPU, with VRP-SS and with primary hashing in turn")
	reps := fs.Int("reps", 3, "repetitions per measurement (--paper-times; the median is shown)")
	maxD := fs.Int("max-daemons", 4, "largest daemon count for --paper-times")
	minD := fs.Int("min-daemons", 1, "smallest daemon count for --paper-times")
	pcorrun := fs.String("pcorrun", "", "pcorrun binary (default: built with go build, else from $PATH)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	kind := kindDemo
	if *times || *throttled {
		kind = kindPaper
	}
	m, set, win, done, err := startViewer(ctx, "view", args, *dir, kind, *winS, *daemons, *pcorrun, false)
	if done {
		return err
	}
	defer m.close()
	if *throttled {
		if m != nil {
			return throttledRun(ctx, m, set, win, max(1, *reps))
		}
		return throttledTimes(ctx, os.Stdout, set, win, max(1, *reps), *pcorrun)
	}
	if *times {
		if m != nil {
			return clusterTimes(ctx, m, set, win, max(1, *reps))
		}
		return paperTimes(ctx, os.Stdout, set, win, max(1, *reps), *minD, *maxD, *pcorrun)
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
	l, kind, err := m.loader(ctx, set)
	if err != nil {
		return err
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

// startViewer is the start shared by the viewer commands: inside an
// application a daemon rank serves until the viewer leaves (done); outside
// one, with daemons > 0, the command re-runs itself under pcorrun (done;
// keepGoing: a daemon that dies leaves the others running); else it opens
// the tile set and parses the window.
func startViewer(ctx context.Context, cmd string, args []string, dir, kind, window string, daemons int, pcorrun string, keepGoing bool) (m *member, set tiles.Set, win view.Window, done bool, err error) {
	if dir == "" && inApp() {
		return nil, set, win, true, fmt.Errorf("%s: under pcorrun, give --dir", cmd)
	}
	m, done, err = joinApp(ctx, dir)
	if done {
		return nil, set, win, true, err
	}
	if dir == "" {
		// The set in the cache, made once here: the processes started
		// under pcorrun are then given its directory.
		s, err := cachedSet(ctx, cmd, "", kind, daemons)
		if err != nil {
			return nil, set, win, true, err
		}
		dir, args = s.Dir, append(slices.Clip(args), "--dir", s.Dir)
	}
	if m == nil && daemons > 0 {
		var flags []string
		if keepGoing {
			flags = append(flags, "--keep-going")
		}
		return nil, set, win, true, underPcorrun(ctx, pcorrun, daemons, flags, cmd, args, os.Stdout)
	}
	if set, err = tiles.Open(dir); err == nil {
		win, err = parseWindow(window)
	}
	if err != nil {
		m.close()
		return nil, set, win, true, err
	}
	return m, set, win, false, nil
}

// underPcorrun runs this program's command cmd with args as the
// processes of an application of daemons daemons and a viewer.
func underPcorrun(ctx context.Context, pcorrunBin string, daemons int, flags []string, cmd string, args []string, stdout io.Writer) error {
	self, bin, err := launchBinaries(ctx, pcorrunBin)
	if err != nil {
		return err
	}
	return stoppedOK(ctx, cmd, runPcorrun(ctx, bin, daemons+1, flags, append([]string{self, cmd}, args...), stdout, os.Stderr))
}

// stoppedOK is err, or nil when ctx ended: the user stopped the command
// (Ctrl-C), and pcorrun's status then still reports a process that failed
// before (it said which).
func stoppedOK(ctx context.Context, cmd string, err error) error {
	if ctx.Err() != nil {
		fmt.Printf("%s: stopped\n", cmd)
		return nil
	}
	return err
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
