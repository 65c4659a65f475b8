// Package perfplot draws perfmodel's measurements and models as charts:
// measured points as marks beside model curves, saved as SVG, PNG or PDF.
//
// It is apart from perfmodel so that programs which fit and predict
// (perfmodel, and routing and pcor through it) do not link the plotting
// library, its image and font packages and the fonts it embeds; a program
// imports perfplot only where it draws.
package perfplot

import (
	"fmt"

	"github.com/pcor-go/pcor/perfmodel"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Series is one set of points of a plot: measured points are drawn as
// marks, model curves as lines.
type Series struct {
	Name   string    // the legend's label
	X, Y   []float64 // the points' coordinates, X[i] with Y[i]
	Points bool      // marks instead of a line
}

// Curve samples model m at steps+1 evenly spaced n in [from, to] for p
// processes, as a line Series.
func Curve(name string, m *perfmodel.Model, p, from, to float64, steps int) Series {
	s := Series{Name: name}
	for i := 0; i <= steps; i++ {
		n := from + (to-from)*float64(i)/float64(steps)
		s.X = append(s.X, n)
		s.Y = append(s.Y, m.Predict(n, p).T)
	}
	return s
}

// Plot draws the series on one chart and saves it to path; the file's
// extension (.svg, .png, .pdf) selects the format.
func Plot(path, title, xLabel, yLabel string, series ...Series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	for i, s := range series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("perfplot: series %q has %d x and %d y", s.Name, len(s.X), len(s.Y))
		}
		xy := make(plotter.XYs, len(s.X))
		for j := range s.X {
			xy[j].X, xy[j].Y = s.X[j], s.Y[j]
		}
		if s.Points {
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return err
			}
			sc.Color = plotutil.Color(i)
			sc.Shape = plotutil.Shape(i)
			p.Add(sc)
			p.Legend.Add(s.Name, sc)
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	return p.Save(16*vg.Centimeter, 10*vg.Centimeter, path)
}
