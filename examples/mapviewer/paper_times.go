package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/cluster"
	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/view"
	"github.com/pcor-go/pcor/pcor"
)

// paperPlans are the plans of the paper's seven regions.
func paperPlans(set tiles.Set, win view.Window) ([]view.Paper, []view.Plan, error) {
	prs := view.PaperRegions(set, win)
	plans := make([]view.Plan, len(prs))
	for i, pr := range prs {
		var err error
		if plans[i], err = view.Fit(set, pr.Region, win); err != nil {
			return nil, nil, err
		}
	}
	return prs, plans, nil
}

// pair is one render by local threads and the next through the daemons,
// made back to back so that the machine's load weighs on both alike, with
// the CPU time each took: of the application on this machine (the viewer
// and its daemons; other work not counted) and of the viewer alone.
type pair struct {
	local, cluster         time.Duration
	localBusy, clusterBusy time.Duration
	localOwn, clusterOwn   time.Duration
	net                    netCount // the viewer's traffic in the cluster render
	localCS, clusterCS     switches // of the viewer and its daemons
}

// netCount is what a node's ports counted (sent and received added up):
// datagrams carrying message fragments, acknowledgements sent alone,
// messages; batches of datagrams its dispatcher goroutine received (each
// handed to a waiting goroutine: a hand-off and often a wake-up), batches
// a waiting goroutine received itself, and sleeps of such a goroutine
// whose message did not come within its spin (each a wake-up).
type netCount struct {
	frags, acks, msgs, dispatcher, driven, sleeps uint64
}

// netLine starts the line rank 0 prints per cluster render under pcorrun:
// "net <region> <rep>" and the netCount fields in order.
const netLine = "net"

func netNow(n *pcor.Node) netCount {
	var c netCount
	for _, s := range n.Stats() {
		c.frags += s.FragsSent + s.FragsRecv
		c.acks += s.AcksSent + s.AcksRecv
		c.msgs += s.MessagesSent + s.MessagesRecv
		c.dispatcher += s.DispatcherBatches
		c.driven += s.ThreadBatches
		c.sleeps += s.DriverSleeps
	}
	return c
}

func (c netCount) sub(d netCount) netCount {
	return netCount{c.frags - d.frags, c.acks - d.acks, c.msgs - d.msgs, c.dispatcher - d.dispatcher, c.driven - d.driven, c.sleeps - d.sleeps}
}

// switchesLine starts the line rank 0 prints per render pair under
// pcorrun: "switches <region> <rep>" and the context switches of the
// application's threads in the local render (voluntary, involuntary), then
// in the cluster render.
const switchesLine = "switches"

// timesLine starts the line rank 0 prints per render pair under pcorrun:
// "times <region> <rep> <local ns> <cluster ns> <local app CPU ns>
// <cluster app CPU ns> <local viewer CPU ns> <cluster viewer CPU ns>".
const timesLine = "times"

// clusterTimes is --paper-times in rank 0 of an application: each of the
// seven regions rendered reps times by local threads and through the
// daemons in turn, the pixels compared, one line per pair for the
// launching process.
func clusterTimes(ctx context.Context, m *member, set tiles.Set, win view.Window, reps int) error {
	prs, plans, err := paperPlans(set, win)
	if err != nil {
		return err
	}
	cl, _, err := m.loader(ctx, set)
	if err != nil {
		return err
	}
	local := loader.NewLocal(set, 0)
	// The local threads collect as the daemons do, so that both sides
	// decode under the same collector setting.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(cluster.GCPercent)
	}
	for i, p := range plans {
		for rep := range reps {
			s0 := switchesNow()
			b0, o0 := cpuNow()
			ld, lpix, err := timeView(ctx, local, p, 1)
			if err != nil {
				return err
			}
			b1, o1 := cpuNow()
			s1 := switchesNow()
			n1 := netNow(m.p.Node)
			cd, cpix, err := timeView(ctx, cl, p, 1)
			if err != nil {
				return err
			}
			b2, o2 := cpuNow()
			s2 := switchesNow()
			nc := netNow(m.p.Node).sub(n1)
			ls, cs := s1.sub(s0), s2.sub(s1)
			if string(lpix) != string(cpix) {
				return fmt.Errorf("cluster view differs from the local view for %s", prs[i].Name)
			}
			fmt.Printf("%s %d %d %d %d %d %d %d %d\n", timesLine, i, rep, ld.Nanoseconds(), cd.Nanoseconds(),
				b1-b0, b2-b1, o1-o0, o2-o1)
			fmt.Printf("%s %d %d %d %d %d %d %d %d\n", netLine, i, rep, nc.frags, nc.acks, nc.msgs, nc.dispatcher, nc.driven, nc.sleeps)
			fmt.Printf("%s %d %d %d %d %d %d\n", switchesLine, i, rep, ls.vol, ls.invol, cs.vol, cs.invol)
		}
	}
	return nil
}

// parseTimes reads rank 0's lines from pcorrun's output: the pairs of
// every region.
func parseTimes(out []byte, regions, reps int) ([][]pair, error) {
	ps := make([][]pair, regions)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "[0] "+switchesLine+" "); ok {
			var i, rep int
			var l, c switches
			if n, err := fmt.Sscanf(rest, "%d %d %d %d %d %d", &i, &rep, &l.vol, &l.invol, &c.vol, &c.invol); n != 6 || err != nil || i < 0 || i >= regions || len(ps[i]) != rep+1 {
				return nil, fmt.Errorf("bad line %q", sc.Text())
			}
			ps[i][rep].localCS, ps[i][rep].clusterCS = l, c
			continue
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "[0] "+netLine+" "); ok {
			var i, rep int
			var c netCount
			if n, err := fmt.Sscanf(rest, "%d %d %d %d %d %d %d %d", &i, &rep, &c.frags, &c.acks, &c.msgs, &c.dispatcher, &c.driven, &c.sleeps); n != 8 || err != nil || i < 0 || i >= regions || len(ps[i]) != rep+1 {
				return nil, fmt.Errorf("bad line %q", sc.Text())
			}
			ps[i][rep].net = c
			continue
		}
		rest, ok := strings.CutPrefix(sc.Text(), "[0] "+timesLine+" ")
		if !ok {
			continue
		}
		var i, rep int
		var p pair
		if n, err := fmt.Sscanf(rest, "%d %d %d %d %d %d %d %d", &i, &rep, &p.local, &p.cluster, &p.localBusy, &p.clusterBusy, &p.localOwn, &p.clusterOwn); n != 8 || err != nil || i < 0 || i >= regions || p.local <= 0 || p.cluster <= 0 {
			return nil, fmt.Errorf("bad line %q", sc.Text())
		}
		ps[i] = append(ps[i], p)
	}
	for i := range ps {
		if len(ps[i]) != reps {
			return nil, fmt.Errorf("region %d: %d of %d renders timed; output:\n%s", i, len(ps[i]), reps, out)
		}
	}
	return ps, nil
}

// paperRun is one daemon count's run of --paper-times.
type paperRun struct {
	daemons int
	pairs   [][]pair // per region
	load    Load
}

// paperTimes is the analogue of the paper's Figure 5: the seven regions
// with minDaemons..maxDaemons daemons, each count a pcor application started by
// pcorrun (daemons on this machine, each owning one node directory of a
// copy of the set laid out for it), whose viewer renders every region
// with local threads and through the daemons in turn. The cluster views
// must equal the local ones pixel for pixel.
func paperTimes(ctx context.Context, w io.Writer, set tiles.Set, win view.Window, reps, minDaemons, maxDaemons int, pcorrunBin string) error {
	_, plans, err := paperPlans(set, win)
	if err != nil {
		return err
	}
	if maxDaemons < 1 || maxDaemons > set.Cols*set.Rows {
		return fmt.Errorf("--max-daemons %d: 1 to the number of tiles", maxDaemons)
	}
	if minDaemons < 1 || minDaemons > maxDaemons {
		return fmt.Errorf("--min-daemons %d: 1 to --max-daemons (%d)", minDaemons, maxDaemons)
	}
	self, bin, err := launchBinaries(ctx, pcorrunBin)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mapviewer-paper-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var runs []paperRun
	for k := minDaemons; k <= maxDaemons; k++ {
		ks, err := tiles.Relayout(set, filepath.Join(tmp, strconv.Itoa(k)), k, 1)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		prog := []string{self, "view", "--paper-times", "--dir", ks.Dir, "--window", fmt.Sprintf("%dx%d", win.W, win.H), "--reps", strconv.Itoa(reps)}
		lm := startLoad()
		if err := runPcorrun(ctx, bin, k+1, nil, prog, &out, os.Stderr); err != nil {
			return fmt.Errorf("%d daemons: %w\n%s", k, err, out.Bytes())
		}
		run := paperRun{daemons: k, load: lm.stop()}
		if run.pairs, err = parseTimes(out.Bytes(), len(plans), reps); err != nil {
			return fmt.Errorf("%d daemons: %w", k, err)
		}
		runs = append(runs, run)
	}
	writePaperTable(w, set, win, reps, plans, runs)
	return nil
}

// writePaperTable prints the Figure 5 table. Each daemon count is its own
// run, whose local and cluster renders alternate; its cell gives the
// median of the local renders of the region in that run, the median of
// its renders through the daemons, their ratio (so the printed numbers
// divide), and in brackets the lowest and highest ratio of a cluster
// render to the local render made just before it: the spread the
// machine's noise gives.
func writePaperTable(w io.Writer, set tiles.Set, win view.Window, reps int, plans []view.Plan, runs []paperRun) {
	fmt.Fprintf(w, "%dx%d map of %dx%d tiles (%s), %dx%d window; each daemon count is one pcorrun -n k+1 on this machine;\n",
		set.MapW(), set.MapH(), set.TileW, set.TileH, sourceName(set), win.W, win.H)
	fmt.Fprintf(w, "%d renders per region and loader, local and cluster in turn; cluster pixels equal local.\n", reps)
	fmt.Fprintf(w, "per daemon count: local ms, cluster ms (medians of that run), ratio of the two, [lowest-highest] ratio of back-to-back pairs\n\n")
	cells := make([][]string, len(plans))
	width := 0
	for i := range plans {
		for _, r := range runs {
			var ls, cs []time.Duration
			var rs []float64
			for _, pr := range r.pairs[i] {
				ls = append(ls, pr.local)
				cs = append(cs, pr.cluster)
				rs = append(rs, float64(pr.cluster)/float64(pr.local))
			}
			lm, cm := median(ls), median(cs)
			c := fmt.Sprintf("%.1f %.1f %.2fx [%.2f-%.2f]", ms(lm), ms(cm), float64(cm)/float64(lm), slices.Min(rs), slices.Max(rs))
			cells[i] = append(cells[i], c)
			width = max(width, len(c))
		}
	}
	fmt.Fprintf(w, "%-9s %5s", "region", "tiles")
	for _, r := range runs {
		fmt.Fprintf(w, "  %*s", width, fmt.Sprintf("%d daemon%s", r.daemons, plural(r.daemons)))
	}
	fmt.Fprintln(w)
	for i, p := range plans {
		fmt.Fprintf(w, "%-9s %5d", regionName(i, p), len(p.Tiles))
		for _, c := range cells[i] {
			fmt.Fprintf(w, "  %*s", width, c)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for _, r := range runs {
		fmt.Fprintf(w, "run with %d daemon%s: %v\n", r.daemons, plural(r.daemons), r.load)
	}
	if len(runs) > 0 && len(plans) > 0 {
		writeCPU(w, len(plans[len(plans)-1].Tiles), runs[len(runs)-1])
	}
}

// writeCPU says where the time of the largest region goes through the
// most daemons: the CPU the application spent per render (the viewer's and
// the daemons', medians), and the viewer's own share. On 2 CPUs kept busy
// the extra CPU is extra time.
func writeCPU(w io.Writer, tiles int, r paperRun) {
	ps := r.pairs[len(r.pairs)-1]
	med := func(f func(pair) time.Duration) time.Duration {
		ds := make([]time.Duration, len(ps))
		for i, p := range ps {
			ds[i] = f(p)
		}
		return median(ds)
	}
	lb, cb := med(func(p pair) time.Duration { return p.localBusy }), med(func(p pair) time.Duration { return p.clusterBusy })
	lo, co := med(func(p pair) time.Duration { return p.localOwn }), med(func(p pair) time.Duration { return p.clusterOwn })
	fmt.Fprintf(w, "%d-tile view, %d daemon%s: CPU of the viewer and its daemons per render %.0f ms local, %.0f ms cluster (%+.0f ms, %+.2f ms a tile);\n",
		tiles, r.daemons, plural(r.daemons), ms(lb), ms(cb), ms(cb-lb), ms(cb-lb)/float64(tiles))
	fmt.Fprintf(w, "  the viewer's own CPU: %.0f ms local (decoding), %.0f ms cluster (%.2f ms a tile: requests, replies, copies)\n",
		ms(lo), ms(co), ms(co)/float64(tiles))
	perPair := func(f func(pair) uint64) float64 {
		vs := make([]float64, len(ps))
		for i, p := range ps {
			vs[i] = float64(f(p)) / float64(tiles)
		}
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	fmt.Fprintf(w, "  context switches of the viewer's and its daemons' threads a tile: local %.1f voluntary (sleeps, hand-offs) + %.1f involuntary (preempted), cluster %.1f + %.1f\n",
		perPair(func(p pair) uint64 { return p.localCS.vol }), perPair(func(p pair) uint64 { return p.localCS.invol }),
		perPair(func(p pair) uint64 { return p.clusterCS.vol }), perPair(func(p pair) uint64 { return p.clusterCS.invol }))
	per := func(f func(netCount) uint64) float64 {
		return perPair(func(p pair) uint64 { return f(p.net) })
	}
	fmt.Fprintf(w, "  the viewer's traffic a tile (sent and received): %.2f datagrams of data, %.2f acknowledgements alone, %.2f messages;\n",
		per(func(c netCount) uint64 { return c.frags }), per(func(c netCount) uint64 { return c.acks }), per(func(c netCount) uint64 { return c.msgs }))
	fmt.Fprintf(w, "  %.2f batches received by its dispatcher (handed to the waiting goroutine), %.2f by a waiting goroutine itself, %.2f sleeps of one (wake-ups)\n",
		per(func(c netCount) uint64 { return c.dispatcher }), per(func(c netCount) uint64 { return c.driven }), per(func(c netCount) uint64 { return c.sleeps }))
}

// cpuNow is the CPU time of the application on this machine (this
// process and its peers) and of this process, in nanoseconds.
func cpuNow() (app, own int64) {
	o := selfCPU()
	return int64((o + peersCPU()) * 1e9), int64(o * 1e9)
}

// regionName is "R7 1:16": the paper's region number and the scale its
// plan really uses on this tile set (view.Paper's name).
func regionName(i int, p view.Plan) string { return fmt.Sprintf("R%d 1:%d", i+1, p.Scale) }

func sourceName(s tiles.Set) string {
	if s.Source == "" {
		return "procedural"
	}
	return filepath.Base(s.Source)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
