package main

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotSteals draws, for the first task tree of the rows, the attempted
// steals between groups against the number of processes, one line per
// group count and policy, beside the bound; and the same divided by the
// bound.
func plotSteals(file string, rows []row) error {
	if len(rows) == 0 {
		return fmt.Errorf("no runs")
	}
	dag := rows[0].dag
	type key struct {
		g      int
		policy string
	}
	series := map[key]plotter.XYs{}
	bounds := map[int]plotter.XYs{}
	var keys []key
	for _, r := range rows {
		if r.dag != dag {
			continue
		}
		k := key{r.res.Groups, r.policy.Kind.String()} // one line per policy, whatever its depth limit
		if _, ok := series[k]; !ok {
			keys = append(keys, k)
		}
		p := float64(r.res.Groups * r.res.PerGroup)
		series[k] = append(series[k], plotter.XY{X: p, Y: float64(max(r.res.WideAttempts, 1))})
		if b := bounds[r.res.Groups]; len(b) == 0 || b[len(b)-1].X != p {
			bounds[r.res.Groups] = append(b, plotter.XY{X: p, Y: r.res.Bound})
		}
	}
	var groups []int
	for g := range bounds {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	palette := []color.Color{
		color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
		color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff},
	}
	dashes := map[string][]vg.Length{"random": {vg.Points(6), vg.Points(3)}, "crs": {vg.Points(1), vg.Points(3)}}

	abs := plot.New()
	abs.Title.Text = fmt.Sprintf("%s: steals between groups", dag)
	abs.X.Label.Text = "processes p"
	abs.Y.Label.Text = "attempted steals between groups"
	rel := plot.New()
	rel.Title.Text = "the same, divided by the bound g·(D + max W_i/p_g)"
	rel.X.Label.Text = "processes p"
	rel.Y.Label.Text = "steals / bound"
	for _, pl := range []*plot.Plot{abs, rel} {
		pl.X.Scale, pl.Y.Scale = plot.LogScale{}, plot.LogScale{}
		pl.X.Tick.Marker, pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		pl.Legend.Top = true
		pl.Legend.Left = true
	}
	for _, k := range keys {
		gi := slices.Index(groups, k.g)
		c := palette[gi%len(palette)]
		pts := series[k]
		name := fmt.Sprintf("%s, g=%d", k.policy, k.g)
		if err := addLine(abs, pts, c, dashes[k.policy], name); err != nil {
			return err
		}
		ratio := make(plotter.XYs, len(pts))
		for i, pt := range pts {
			ratio[i] = plotter.XY{X: pt.X, Y: pt.Y / max(bounds[k.g][i].Y, 1e-9)}
		}
		if err := addLine(rel, ratio, c, dashes[k.policy], name); err != nil {
			return err
		}
	}
	for gi, g := range groups {
		l, err := plotter.NewLine(bounds[g])
		if err != nil {
			return err
		}
		l.Color = palette[gi%len(palette)]
		l.Width = vg.Points(0.5)
		abs.Add(l)
		abs.Legend.Add(fmt.Sprintf("bound, g=%d", g), l)
	}
	const w, h = 20 * vg.Centimeter, 14 * vg.Centimeter
	img := vgimg.New(2*w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Centimeter}
	canvases := plot.Align([][]*plot.Plot{{abs, rel}}, tiles, dc)
	abs.Draw(canvases[0][0])
	rel.Draw(canvases[0][1])
	return saveCanvas(img, file)
}

func addLine(p *plot.Plot, pts plotter.XYs, c color.Color, dash []vg.Length, name string) error {
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.Color, s.Color = c, c
	l.Dashes = dash
	l.Width = vg.Points(1.5)
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}
