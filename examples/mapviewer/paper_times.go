package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/view"
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

// regionTime is one region's median render times with the local and
// the cluster loader, measured in turn in the same process.
type regionTime struct {
	local, cluster time.Duration
}

// timesLine starts the line rank 0 prints per region under pcorrun:
// "times <region> <local ns> <cluster ns>".
const timesLine = "times"

// clusterTimes is --paper-times in rank 0 of an application: each of the
// seven regions rendered reps times by local threads and through the
// daemons in turn (so machine load weighs on both alike), the pixels
// compared, one line per region for the launching process.
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
	for i, p := range plans {
		var lt, ct []time.Duration
		for range reps {
			ld, lpix, err := timeView(ctx, local, p, 1)
			if err != nil {
				return err
			}
			cd, cpix, err := timeView(ctx, cl, p, 1)
			if err != nil {
				return err
			}
			if string(lpix) != string(cpix) {
				return fmt.Errorf("cluster view differs from the local view for %s", prs[i].Name)
			}
			lt, ct = append(lt, ld), append(ct, cd)
		}
		fmt.Printf("%s %d %d %d\n", timesLine, i, median(lt).Nanoseconds(), median(ct).Nanoseconds())
	}
	return nil
}

// parseTimes reads rank 0's lines from pcorrun's output.
func parseTimes(out []byte, regions int) ([]regionTime, error) {
	ts := make([]regionTime, regions)
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "[0] "+timesLine+" ")
		if !ok {
			continue
		}
		var i int
		var l, c int64
		if n, err := fmt.Sscanf(rest, "%d %d %d", &i, &l, &c); n != 3 || err != nil || i < 0 || i >= regions {
			return nil, fmt.Errorf("bad line %q", sc.Text())
		}
		ts[i] = regionTime{time.Duration(l), time.Duration(c)}
		seen++
	}
	if seen != regions {
		return nil, fmt.Errorf("%d of %d regions timed; output:\n%s", seen, regions, out)
	}
	return ts, nil
}

// paperTimes is the analogue of the paper's Figure 5: the seven regions
// with 1..maxDaemons daemons, each count a pcor application started by
// pcorrun (daemons on this machine, each owning one node directory of a
// copy of the set laid out for it), whose viewer renders every region
// with local threads and through the daemons in turn. The cluster views
// must equal the local ones pixel for pixel. The local column is the
// median over the runs; each ratio is against the local time of its own
// run.
func paperTimes(ctx context.Context, set tiles.Set, win view.Window, reps, maxDaemons int, pcorrunBin string) error {
	prs, plans, err := paperPlans(set, win)
	if err != nil {
		return err
	}
	if maxDaemons < 1 || maxDaemons > set.Cols*set.Rows {
		return fmt.Errorf("--max-daemons %d: 1 to the number of tiles", maxDaemons)
	}
	self, err := selfPath()
	if err != nil {
		return err
	}
	bin, err := findPcorrun(ctx, pcorrunBin, filepath.Join(cacheDir(), "bin"))
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mapviewer-paper-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ct := make([][]regionTime, maxDaemons)
	for k := 1; k <= maxDaemons; k++ {
		ks, err := tiles.Relayout(set, filepath.Join(tmp, strconv.Itoa(k)), k, 1)
		if err != nil {
			return err
		}
		var out bytes.Buffer
		prog := []string{self, "view", "--paper-times", "--dir", ks.Dir, "--window", fmt.Sprintf("%dx%d", win.W, win.H), "--reps", strconv.Itoa(reps)}
		if err := runPcorrun(ctx, bin, k+1, nil, prog, &out, os.Stderr); err != nil {
			return fmt.Errorf("%d daemons: %w\n%s", k, err, out.Bytes())
		}
		if ct[k-1], err = parseTimes(out.Bytes(), len(plans)); err != nil {
			return fmt.Errorf("%d daemons: %w", k, err)
		}
	}
	fmt.Printf("paper regions in a %dx%d window, median of %d, time in ms (ratio to local threads in the same run);\n", win.W, win.H, reps)
	fmt.Printf("k daemons = pcorrun -n k+1 on this machine; cluster pixels equal local\n")
	fmt.Printf("%-6s %6s %10s", "region", "tiles", "local")
	for k := 1; k <= maxDaemons; k++ {
		fmt.Printf(" %16s", fmt.Sprintf("%d daemon(s)", k))
	}
	fmt.Println()
	for i, p := range plans {
		var ls []time.Duration
		for k := range maxDaemons {
			ls = append(ls, ct[k][i].local)
		}
		fmt.Printf("%-6s %6d %10.1f", prs[i].Name, len(p.Tiles), ms(median(ls)))
		for k := range maxDaemons {
			fmt.Printf(" %9.1f (%.2fx)", ms(ct[k][i].cluster), float64(ct[k][i].cluster)/float64(ct[k][i].local))
		}
		fmt.Println()
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
