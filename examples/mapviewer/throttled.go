package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/cluster"
	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/view"
	"github.com/pcor-go/pcor/internal/cpuquota"
)

// errNoQuota: CPU quotas cannot be set here (no cgroup cpu controller, or
// not root), so no daemon can be throttled.
var errNoQuota = errors.New("CPU quotas unavailable")

// The throttled run: four daemons on a set of four node directories with
// two replicas of every tile, the last daemon limited to a quarter of a
// CPU (pcorrun --cpu-share), and the largest paper region rendered by
// the cluster loader with each tile-sharing strategy in turn.
const (
	throttledDaemons  = 4
	throttledReplicas = 2
	throttledShare    = 25 // percent of a CPU, for the last daemon
	throttledLine     = "throttled"
)

// throttledRun is --throttled in rank 0 of an application: the last paper
// region rendered reps times with each strategy, in alternating order,
// the pixels compared with a local render, one line per pair for the
// launching process: "throttled <rep> <primary ns> <vrp-ss ns> <rates>".
func throttledRun(ctx context.Context, m *member, set tiles.Set, win view.Window, reps int) error {
	_, plans, err := paperPlans(set, win)
	if err != nil {
		return err
	}
	p := plans[len(plans)-1]
	l, _, err := m.loader(ctx, set)
	if err != nil {
		return err
	}
	cl := m.cl
	if cl == nil {
		return fmt.Errorf("--throttled: no daemons")
	}
	want, err := view.Render(ctx, loader.NewLocal(set, 0), p)
	if err != nil {
		return err
	}
	for rep := range reps {
		var ds [2]time.Duration
		order := []cluster.Strategy{cluster.Primary, cluster.VRPSS}
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			cl.Strategy = s
			res, err := view.Render(ctx, l, p)
			if err != nil {
				return fmt.Errorf("%v: %w", s, err)
			}
			if !bytes.Equal(res.Img.Pix, want.Img.Pix) {
				return fmt.Errorf("%v: the view differs from the local render", s)
			}
			ds[s] = res.Elapsed
		}
		var rates []string
		for proc, r := range cl.Rates() {
			rates = append(rates, fmt.Sprintf("%d=%.0f", proc, r))
		}
		slices.Sort(rates)
		fmt.Printf("%s %d %d %d %s\n", throttledLine, rep, ds[cluster.Primary].Nanoseconds(), ds[cluster.VRPSS].Nanoseconds(), strings.Join(rates, ","))
	}
	return nil
}

// throttledTimes starts the throttled application under pcorrun on a
// copy of set laid out for it and prints the times of both strategies:
// medians, the ratio of the medians, and the spread of the ratios of the
// back-to-back pairs.
func throttledTimes(ctx context.Context, w io.Writer, set tiles.Set, win view.Window, reps int, pcorrunBin string) error {
	if err := cpuquota.Available(); err != nil {
		return fmt.Errorf("%w: %v", errNoQuota, err)
	}
	self, bin, err := launchBinaries(ctx, pcorrunBin)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mapviewer-throttled-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ts, err := tiles.Relayout(set, tmp, throttledDaemons, throttledReplicas)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	prog := []string{self, "view", "--throttled", "--dir", ts.Dir, "--window", fmt.Sprintf("%dx%d", win.W, win.H), "--reps", strconv.Itoa(reps)}
	flags := []string{"--cpu-share", fmt.Sprintf("%d=%d", throttledDaemons, throttledShare)}
	lm := startLoad()
	if err := runPcorrun(ctx, bin, throttledDaemons+1, flags, prog, &out, os.Stderr); err != nil {
		return fmt.Errorf("throttled run: %w\n%s", err, out.Bytes())
	}
	load := lm.stop()
	var prim, vrp []time.Duration
	var ratios []float64
	lastRates := ""
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "[0] "+throttledLine+" ")
		if !ok {
			continue
		}
		var rep int
		var a, b time.Duration
		if n, err := fmt.Sscanf(rest, "%d %d %d %s", &rep, &a, &b, &lastRates); n < 3 || (err != nil && n != 3) || a <= 0 || b <= 0 {
			return fmt.Errorf("throttled run: bad line %q", sc.Text())
		}
		prim, vrp = append(prim, a), append(vrp, b)
		ratios = append(ratios, float64(b)/float64(a))
	}
	if len(prim) != reps {
		return fmt.Errorf("throttled run: %d of %d pairs timed; output:\n%s", len(prim), reps, out.Bytes())
	}
	_, plans, _ := paperPlans(ts, win)
	pm, vm := median(prim), median(vrp)
	fmt.Fprintf(w, "%d-tile view (%s) through %d daemons, %d replicas of every tile, daemon %d limited to %d%% of a CPU;\n",
		len(plans[len(plans)-1].Tiles), regionName(len(plans)-1, plans[len(plans)-1]), throttledDaemons, throttledReplicas, throttledDaemons, throttledShare)
	fmt.Fprintf(w, "%d renders per strategy, in turn; pixels equal the local render. ms: median [lowest-highest]\n", reps)
	fmt.Fprintf(w, "  primary holder (even hashing): %s\n", spreadD(prim))
	fmt.Fprintf(w, "  VRP-SS:                        %s\n", spreadD(vrp))
	fmt.Fprintf(w, "  VRP-SS / primary: %.2fx (ratio of medians); back-to-back pairs %.2f [%.2f-%.2f]\n",
		float64(vm)/float64(pm), medianF(ratios), slices.Min(ratios), slices.Max(ratios))
	fmt.Fprintf(w, "  tiles per second VRP-SS measured per daemon at the end: %s\n", lastRates)
	fmt.Fprintf(w, "run: %v\n", load)
	return nil
}

func spreadD(ds []time.Duration) string {
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = float64(d.Microseconds()) / 1000
	}
	return spread(ms)
}

func medianF(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
