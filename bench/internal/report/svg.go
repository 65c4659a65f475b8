package report

import (
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/pcor-go/pcor/bench/internal/sizes"
)

// ErrNothingToPlot is returned by WriteSVG when no result has a curve.
var ErrNothingToPlot = errors.New("report: no round-trip or throughput results to plot")

const (
	panelW, panelH = 520, 380
	marginL        = 70
	marginR        = 20
	marginT        = 40
	marginB        = 50
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"}

// WriteSVG draws one panel per round-trip or throughput result, two panels
// a row: message size on a log2 axis, time (µs) or MB/s on a log10 axis,
// pcor series solid and baselines dashed.
func WriteSVG(w io.Writer, rs []*Result) error {
	var panels []*Result
	for _, r := range rs {
		if r.Command == "roundtrip" || r.Command == "throughput" {
			panels = append(panels, r)
		}
	}
	if len(panels) == 0 {
		return ErrNothingToPlot
	}
	cols := min(2, len(panels))
	rows := (len(panels) + 1) / 2
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n",
		cols*panelW, rows*panelH)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for i, r := range panels {
		panel(&b, r, (i%2)*panelW, (i/2)*panelH)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func panel(b *strings.Builder, r *Result, ox, oy int) {
	x0, y0 := float64(ox+marginL), float64(oy+marginT)
	pw, ph := float64(panelW-marginL-marginR), float64(panelH-marginT-marginB)
	minS, maxS := math.MaxInt, 0
	minV, maxV := math.Inf(1), math.Inf(-1)
	for _, p := range r.Points {
		if p.Err != "" || p.Median <= 0 {
			continue
		}
		minS, maxS = min(minS, p.Size), max(maxS, p.Size)
		minV, maxV = math.Min(minV, p.Median), math.Max(maxV, p.Median)
	}
	title := "round trip"
	ylabel := "round-trip time (µs, median)"
	if r.Command == "throughput" {
		title, ylabel = "one-way throughput", "throughput (MB/s, median)"
	}
	fmt.Fprintf(b, `<text x="%g" y="%d" font-size="14" font-weight="bold">%s — %s, %s</text>`+"\n",
		x0, oy+22, title, html.EscapeString(r.Placement), html.EscapeString(r.Fabric))
	if maxS == 0 {
		fmt.Fprintf(b, `<text x="%g" y="%g">no data</text>`+"\n", x0+20, y0+40)
		return
	}
	lx0, lx1 := math.Log2(float64(minS)), math.Log2(float64(maxS))
	if lx1 == lx0 {
		lx0, lx1 = lx0-1, lx1+1
	}
	ly0, ly1 := math.Floor(math.Log10(minV)), math.Ceil(math.Log10(maxV))
	if ly1 == ly0 {
		ly1++
	}
	X := func(s int) float64 { return x0 + (math.Log2(float64(s))-lx0)/(lx1-lx0)*pw }
	Y := func(v float64) float64 { return y0 + ph - (math.Log10(v)-ly0)/(ly1-ly0)*ph }
	fmt.Fprintf(b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", x0, y0, pw, ph)
	// Size ticks: every power of two, labelled so they do not crowd.
	step := max(1, int(math.Ceil((lx1-lx0)/10)))
	for e := int(math.Ceil(lx0)); e <= int(lx1); e++ {
		x := x0 + (float64(e)-lx0)/(lx1-lx0)*pw
		fmt.Fprintf(b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/>`+"\n", x, y0, x, y0+ph)
		if (e-int(math.Ceil(lx0)))%step == 0 {
			fmt.Fprintf(b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", x, y0+ph+16, sizes.Format(1<<e))
		}
	}
	for e := int(ly0); e <= int(ly1); e++ {
		y := Y(math.Pow(10, float64(e)))
		fmt.Fprintf(b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+pw, y)
		fmt.Fprintf(b, `<text x="%g" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, y+4, num(math.Pow(10, float64(e)), true))
	}
	fmt.Fprintf(b, `<text x="%g" y="%d" text-anchor="middle">message size (bytes, log scale)</text>`+"\n", x0+pw/2, oy+panelH-12)
	fmt.Fprintf(b, `<text transform="translate(%d,%g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", ox+16, y0+ph/2, ylabel)
	for i, s := range r.Series {
		color := palette[i%len(palette)]
		dash := ""
		if !IsPcor(s) {
			dash = ` stroke-dasharray="6,4"`
		}
		var pts []string
		for _, p := range r.Points {
			if p.Series == s && p.Err == "" && p.Median > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", X(p.Size), Y(p.Median)))
			}
		}
		if len(pts) > 0 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
			for _, pt := range pts {
				xy := strings.Split(pt, ",")
				fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", xy[0], xy[1], color)
			}
		}
		ly := y0 + 14 + float64(i)*16
		lx := x0 + 10
		if r.Command == "throughput" {
			ly = y0 + ph - 10 - float64(len(r.Series)-1-i)*16
			lx = x0 + pw - 150
		}
		fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly-4, lx+24, ly-4, color, dash)
		fmt.Fprintf(b, `<text x="%g" y="%g">%s</text>`+"\n", lx+30, ly, html.EscapeString(s))
	}
}
