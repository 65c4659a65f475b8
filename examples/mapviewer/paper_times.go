package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// regionTime is one region's median render time and pixel digest.
type regionTime struct {
	d   time.Duration
	sum string
}

func digest(pix []byte) string {
	s := sha256.Sum256(pix)
	return hex.EncodeToString(s[:8])
}

// timesLine is the line rank 0 prints per region under pcorrun:
// "times <region> <nanoseconds> <digest>".
const timesLine = "times"

// clusterTimes is --paper-times in rank 0 of an application: the seven
// regions through the daemons, one line each for the launching process.
func clusterTimes(ctx context.Context, m *member, set tiles.Set, win view.Window, reps int) error {
	_, plans, err := paperPlans(set, win)
	if err != nil {
		return err
	}
	l, _, err := m.loader(ctx, set)
	if err != nil {
		return err
	}
	for i, p := range plans {
		d, pix, err := timeView(ctx, l, p, reps)
		if err != nil {
			return err
		}
		fmt.Printf("%s %d %d %s\n", timesLine, i, d.Nanoseconds(), digest(pix))
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
		f := strings.Fields(rest)
		if len(f) != 3 {
			return nil, fmt.Errorf("bad line %q", sc.Text())
		}
		i, err1 := strconv.Atoi(f[0])
		ns, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || i < 0 || i >= regions {
			return nil, fmt.Errorf("bad line %q", sc.Text())
		}
		ts[i] = regionTime{time.Duration(ns), f[2]}
		seen++
	}
	if seen != regions {
		return nil, fmt.Errorf("%d of %d regions timed; output:\n%s", seen, regions, out)
	}
	return ts, nil
}

// paperTimes is the analogue of the paper's Figure 5: the seven regions
// with the local loader here, then with 1..maxDaemons daemons, each count
// a pcor application started by pcorrun (the daemons on this machine,
// each owning one node directory of a copy of the set laid out for it).
// The cluster views must equal the local ones pixel for pixel.
func paperTimes(ctx context.Context, set tiles.Set, win view.Window, reps, maxDaemons int, pcorrunBin string) error {
	prs, plans, err := paperPlans(set, win)
	if err != nil {
		return err
	}
	if maxDaemons > set.Cols*set.Rows {
		return fmt.Errorf("--max-daemons %d: more daemons than tiles", maxDaemons)
	}
	self, err := selfPath()
	if err != nil {
		return err
	}
	bin, err := findPcorrun(ctx, pcorrunBin, filepath.Join(cacheDir(), "bin"))
	if err != nil {
		return err
	}
	local := loader.NewLocal(set, 0)
	lt := make([]regionTime, len(plans))
	for i, p := range plans {
		d, pix, err := timeView(ctx, local, p, reps)
		if err != nil {
			return err
		}
		lt[i] = regionTime{d, digest(pix)}
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
		for i := range plans {
			if ct[k-1][i].sum != lt[i].sum {
				return fmt.Errorf("%d daemons: cluster view differs from the local view for %s", k, prs[i].Name)
			}
		}
	}
	fmt.Printf("paper regions in a %dx%d window, median of %d, time in ms (ratio to local);\n", win.W, win.H, reps)
	fmt.Printf("k daemons = pcorrun -n k+1 on this machine; cluster pixels equal local\n")
	fmt.Printf("%-6s %6s %10s", "region", "tiles", "local")
	for k := 1; k <= maxDaemons; k++ {
		fmt.Printf(" %16s", fmt.Sprintf("%d daemon(s)", k))
	}
	fmt.Println()
	for i, p := range plans {
		fmt.Printf("%-6s %6d %10.1f", prs[i].Name, len(p.Tiles), ms(lt[i].d))
		for k := range maxDaemons {
			fmt.Printf(" %9.1f (%.2fx)", ms(ct[k][i].d), float64(ct[k][i].d)/float64(lt[i].d))
		}
		fmt.Println()
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
