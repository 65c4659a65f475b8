package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pcor-go/pcor/bench/internal/sizes"
)

// WriteTable writes an aligned, OSU-style table: a commented header, one
// row per size (or thread count), the median and the spread of the
// repetitions ((max-min)/median) of each series, then the ratios of
// medians; a second table of what each series spent per operation (CPU
// µs, context switches, system calls, both processes together); and a
// Hockney summary line per series for round trips.
func WriteTable(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "# pcor-go %s  placement=%s fabric=%s  (%s; ratio = pcor median / baseline median)\n",
		r.Command, r.Placement, r.Fabric, r.Unit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	key := "size"
	if r.Command == "contention" {
		key = "threads"
	}
	cols := []string{"# " + key}
	if r.Command == "contention" {
		cols = append(cols, "size")
	}
	for _, s := range r.Series {
		cols = append(cols, s, "±")
		if r.Command == "contention" {
			cols = append(cols, "MB/s")
		}
	}
	type rc struct{ s, b string }
	var rcols []rc
	for _, s := range r.Series {
		if !IsPcor(s) {
			continue
		}
		if r.Command == "contention" {
			rcols = append(rcols, rc{s, "best"})
			cols = append(cols, strings.TrimPrefix(s, "pcor/")+"/best")
			continue
		}
		for _, b := range r.Baselines {
			rcols = append(rcols, rc{s, b})
			cols = append(cols, strings.TrimPrefix(s, "pcor/")+"/"+b)
		}
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	for _, k := range r.keys() {
		var row []string
		if r.Command == "contention" {
			row = append(row, strconv.Itoa(k[1]), sizes.Format(k[0]))
		} else {
			row = append(row, sizes.Format(k[0]))
		}
		for _, s := range r.Series {
			p, ok := r.Get(s, k[0], k[1])
			row = append(row, num(p.Median, ok), spread(p, ok))
			if r.Command == "contention" {
				row = append(row, num(p.Median*float64(k[0])/1e6, ok))
			}
		}
		for _, c := range rcols {
			v, ok := r.Ratio(c.s, c.b, k[0], k[1])
			row = append(row, ratio(v, ok))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writePerOp(w, r); err != nil {
		return err
	}
	for _, f := range r.Fits {
		fmt.Fprintf(w, "# Hockney fit %-14s T(m) = a + m/b on one-way times: a = %.2f us, b = %s MB/s, n1/2 = %s B\n",
			f.Series, f.A, num(f.B, true), num(f.NHalf, true))
	}
	for _, p := range r.Points {
		if p.Err != "" {
			fmt.Fprintf(w, "# %s at %s: %s\n", p.Series, sizes.Format(p.Size), p.Err)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "# %s\n", n)
	}
	return nil
}

func num(v float64, ok bool) string {
	switch {
	case !ok || math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1) || v >= 1e12:
		return "inf"
	case v >= 1e9:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case v >= 1e6:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func spread(p Point, ok bool) string {
	if !ok || p.Reps < 2 {
		return "-"
	}
	return strconv.FormatFloat(100*p.Spread(), 'f', 0, 64) + "%"
}

// writePerOp writes the per-operation spending of each series, if any was
// measured: "CPU µs / switches / syscalls" per round trip or message.
func writePerOp(w io.Writer, r *Result) error {
	any := false
	for _, p := range r.Points {
		any = any || p.Per != nil
	}
	if !any {
		return nil
	}
	op := "message"
	if r.Command == "roundtrip" {
		op = "round trip"
	}
	fmt.Fprintf(w, "# per %s, both processes: CPU us / context switches (voluntary) / system calls\n", op)
	// Every line is a comment, so that readers of the first table (which
	// find its columns by the header) are not misled by this one.
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	cols := []string{"size"}
	if r.Command == "contention" {
		cols = []string{"threads"}
	}
	cols = append(cols, r.Series...)
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	for _, k := range r.keys() {
		row := []string{sizes.Format(k[0])}
		if r.Command == "contention" {
			row = []string{strconv.Itoa(k[1])}
		}
		for _, s := range r.Series {
			p, ok := r.Get(s, k[0], k[1])
			row = append(row, perOp(p.Per, ok))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if l != "" {
			fmt.Fprint(w, "#"+l)
		}
	}
	return nil
}

func perOp(c *PerOp, ok bool) string {
	if !ok || c == nil {
		return "-"
	}
	f := func(v float64) string {
		if v >= 100 {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	sys := "?"
	if c.Syscalls >= 0 {
		sys = f(c.Syscalls)
	}
	return f(c.CPU) + " / " + f(c.Switches) + " (" + f(c.Voluntary) + ") / " + sys
}

func ratio(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + "x"
}

// WriteJSON writes the results as one indented JSON array.
func WriteJSON(w io.Writer, rs []*Result) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(rs)
}

// WriteCSV writes one line per point, with its ratios to each baseline.
func WriteCSV(w io.Writer, rs []*Result) error {
	c := csv.NewWriter(w)
	c.Write([]string{"command", "placement", "fabric", "series", "size", "threads", "unit", "median", "p99", "samples",
		"reps", "lo", "hi", "cpu_us", "switches", "syscalls", "baseline", "ratio", "error"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range rs {
		for _, p := range r.Points {
			base := []string{r.Command, r.Placement, r.Fabric, p.Series, strconv.Itoa(p.Size), strconv.Itoa(p.Threads),
				r.Unit, f(p.Median), f(p.P99), strconv.Itoa(p.N), strconv.Itoa(p.Reps), f(p.Lo), f(p.Hi), "", "", ""}
			if p.Per != nil {
				base[13], base[14], base[15] = f(p.Per.CPU), f(p.Per.Switches), f(p.Per.Syscalls)
			}
			wrote := false
			for _, x := range r.Ratios {
				if x.Series == p.Series && x.Size == p.Size && x.Threads == p.Threads {
					c.Write(append(base, x.Baseline, f(x.Value), p.Err))
					wrote = true
				}
			}
			if !wrote {
				c.Write(append(base, "", "", p.Err))
			}
		}
	}
	c.Flush()
	return c.Error()
}
