package perfmodel

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// Errors of Fit.
var (
	// ErrTooFewPoints: a fit needs more observations than coefficients.
	ErrTooFewPoints = errors.New("perfmodel: fewer observations than coefficients")
	// ErrIllConditioned: the observations cannot tell the terms apart (for
	// example a term in p fitted to a single process count).
	ErrIllConditioned = errors.New("perfmodel: ill-conditioned fit")
)

// maxCond is the largest condition number of the scaled design matrix
// that Fit accepts.
const maxCond = 1e12

// Term is the monomial n^N · p^P of a model; P < 0 divides by p.
type Term struct {
	N int `json:"n"` // the power of n
	P int `json:"p"` // the power of p (negative: a divisor)
}

func (t Term) at(n, p float64) float64 {
	return math.Pow(n, float64(t.N)) * math.Pow(p, float64(t.P))
}

func (t Term) String() string {
	var b strings.Builder
	pow := func(v string, e int) {
		switch {
		case e == 1:
			b.WriteString(v)
		case e > 1:
			fmt.Fprintf(&b, "%s^%d", v, e)
		}
	}
	pow("n", t.N)
	if t.P > 0 {
		if b.Len() > 0 {
			b.WriteString("·")
		}
		pow("p", t.P)
	}
	if t.P < 0 {
		if b.Len() == 0 {
			b.WriteString("1")
		}
		b.WriteString("/")
		pow("p", -t.P)
	}
	if b.Len() == 0 {
		return "1"
	}
	return b.String()
}

// Form is the shape of a model: the sum of its terms, each with a
// coefficient to fit.
type Form []Term

// Linear is a + b·n: the time of a message of n bytes, or of a single loop.
func Linear() Form { return Poly(1) }

// Poly is the polynomial of degree d in n: d nested loops.
func Poly(d int) Form {
	f := make(Form, d+1)
	for i := range f {
		f[i] = Term{N: i}
	}
	return f
}

// Terms is the two-variable form Σ c_ij · n^i · p^j for i = 0..degree and
// j in pPows: Terms(2, 0, -1) is (a0 + a1/p) + (b0 + b1/p)·n + (c0 + c1/p)·n².
func Terms(degree int, pPows ...int) Form {
	var f Form
	for i := 0; i <= degree; i++ {
		for _, j := range pPows {
			f = append(f, Term{N: i, P: j})
		}
	}
	return f
}

func (f Form) String() string {
	s := make([]string, len(f))
	for i, t := range f {
		s[i] = t.String()
	}
	return strings.Join(s, " + ")
}

// Weighting selects what the least-squares fit minimises.
type Weighting int

const (
	// Absolute minimises the sum of squared residuals in seconds: large
	// times dominate.
	Absolute Weighting = iota
	// Relative minimises the sum of squared relative residuals, (t − t̂)/t:
	// every observation counts alike, so small sizes are predicted as well
	// as large ones.
	Relative
)

// Model is a fitted model with its goodness of fit.
type Model struct {
	Name      string      `json:"name,omitempty"` // as stored in a Set
	Form      Form        `json:"form"`           // the terms fitted
	Coef      []float64   `json:"coef"`           // each term's coefficient, seconds per unit of the term
	SE        []float64   `json:"se"`             // standard error of each coefficient
	Cov       [][]float64 `json:"cov"`            // covariance of the coefficients
	Weighting Weighting   `json:"weighting"`      // what the fit minimised
	// Sigma is the residual standard deviation: seconds (Absolute) or a
	// fraction of the time (Relative).
	Sigma     float64 `json:"sigma"`
	R2        float64 `json:"r2"`              // coefficient of determination, on the residuals in seconds
	AdjR2     float64 `json:"adj_r2"`          // R2 adjusted for the number of coefficients
	RMSE      float64 `json:"rmse"`            // seconds
	MaxRelErr float64 `json:"max_rel_err"`     // worst |t − t̂|/t over the fitted points
	Points    int     `json:"points"`          // observations fitted
	NMin      float64 `json:"n_min"`           // the smallest n fitted
	NMax      float64 `json:"n_max"`           // the largest n fitted
	PMin      float64 `json:"p_min,omitempty"` // the smallest p fitted
	PMax      float64 `json:"p_max,omitempty"` // the largest p fitted (0: no p, see Extrapolates)
}

// Fit fits form to the observations by (weighted) least squares, solving
// with a QR factorisation of the column-scaled design matrix.
func Fit(form Form, obs []Observation, w Weighting) (*Model, error) {
	k, q := len(obs), len(form)
	if q == 0 || k < q {
		return nil, ErrTooFewPoints
	}
	x := mat.NewDense(k, q, nil)
	y := mat.NewVecDense(k, nil)
	for i, o := range obs {
		wi := 1.0
		if w == Relative {
			if !(o.T > 0) {
				return nil, fmt.Errorf("perfmodel: relative fit of a non-positive time %g", o.T)
			}
			wi = 1 / o.T
		}
		for j, t := range form {
			x.Set(i, j, wi*t.at(o.N, o.P))
		}
		y.SetVec(i, wi*o.T)
	}
	// Scale each column to unit maximum so that n³ beside 1 stays well
	// conditioned.
	scale := make([]float64, q)
	for j := range q {
		for i := range k {
			scale[j] = math.Max(scale[j], math.Abs(x.At(i, j)))
		}
		if scale[j] == 0 {
			return nil, ErrIllConditioned
		}
		for i := range k {
			x.Set(i, j, x.At(i, j)/scale[j])
		}
	}
	if c := mat.Cond(x, 2); c > maxCond || math.IsNaN(c) {
		return nil, ErrIllConditioned
	}
	var qr mat.QR
	qr.Factorize(x)
	var c mat.VecDense
	if err := qr.SolveVecTo(&c, false, y); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIllConditioned, err)
	}
	var xtx, inv mat.Dense
	xtx.Mul(x.T(), x)
	if err := inv.Inverse(&xtx); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIllConditioned, err)
	}

	m := &Model{Form: append(Form(nil), form...), Weighting: w, Points: k,
		Coef: make([]float64, q), SE: make([]float64, q), Cov: make([][]float64, q)}
	for j := range q {
		m.Coef[j] = c.AtVec(j) / scale[j]
	}
	var ssr float64 // weighted
	ts := make([]float64, k)
	var sse float64 // in seconds
	for i, o := range obs {
		ts[i] = o.T
		pred := m.at(o.N, o.P)
		r := o.T - pred
		sse += r * r
		if w == Relative {
			r /= o.T
		}
		ssr += r * r
		if o.T != 0 {
			m.MaxRelErr = math.Max(m.MaxRelErr, math.Abs(o.T-pred)/math.Abs(o.T))
		}
		if i == 0 {
			m.NMin, m.NMax, m.PMin, m.PMax = o.N, o.N, o.P, o.P
		}
		m.NMin, m.NMax = math.Min(m.NMin, o.N), math.Max(m.NMax, o.N)
		m.PMin, m.PMax = math.Min(m.PMin, o.P), math.Max(m.PMax, o.P)
	}
	if dof := k - q; dof > 0 {
		m.Sigma = math.Sqrt(ssr / float64(dof))
	}
	s2 := m.Sigma * m.Sigma
	for a := range q {
		m.Cov[a] = make([]float64, q)
		for b := range q {
			m.Cov[a][b] = s2 * inv.At(a, b) / (scale[a] * scale[b])
		}
		m.SE[a] = math.Sqrt(m.Cov[a][a])
	}
	m.RMSE = math.Sqrt(sse / float64(k))
	_, vy := stat.MeanVariance(ts, nil)
	if sst := vy * float64(k-1); sst > 0 {
		m.R2 = 1 - sse/sst
		if k > q {
			m.AdjR2 = 1 - (1-m.R2)*float64(k-1)/float64(k-q)
		}
	}
	return m, nil
}

// at is the model's time at (n, p).
func (m *Model) at(n, p float64) float64 {
	var t float64
	for j, term := range m.Form {
		t += m.Coef[j] * term.at(n, p)
	}
	return t
}

// Estimate is a predicted time and its standard error, seconds.
type Estimate struct {
	T  float64 `json:"t"`  // the predicted time
	SE float64 `json:"se"` // the standard error of a new measurement there
}

// Predict returns the model's time at (n, p) and the standard error of a
// new measurement there: the coefficients' uncertainty at that point
// (xᵀ·Cov·x) plus the residual scatter the fit showed.
func (m *Model) Predict(n, p float64) Estimate {
	t := m.at(n, p)
	var v float64
	x := make([]float64, len(m.Form))
	for j, term := range m.Form {
		x[j] = term.at(n, p)
	}
	for a := range x {
		for b := range x {
			if a < len(m.Cov) && b < len(m.Cov[a]) {
				v += x[a] * m.Cov[a][b] * x[b]
			}
		}
	}
	s := m.Sigma
	if m.Weighting == Relative {
		s *= math.Abs(t)
	}
	return Estimate{T: t, SE: math.Sqrt(math.Max(v, 0) + s*s)}
}

// Extrapolates reports whether (n, p) lies outside the range fitted.
func (m *Model) Extrapolates(n, p float64) bool {
	return n < m.NMin || n > m.NMax || (m.PMax > 0 && (p < m.PMin || p > m.PMax))
}

// String prints the model with its coefficients and goodness of fit.
func (m *Model) String() string {
	var b strings.Builder
	if m.Name != "" {
		fmt.Fprintf(&b, "%s: ", m.Name)
	}
	b.WriteString("T(n,p) =")
	for j, t := range m.Form {
		c := m.Coef[j]
		sign := "+"
		if c < 0 {
			sign, c = "−", -c
		}
		if j == 0 && sign == "+" {
			sign = ""
		}
		if t.String() == "1" {
			fmt.Fprintf(&b, " %s %.4g", sign, c)
		} else {
			fmt.Fprintf(&b, " %s %.4g·%s", sign, c, t)
		}
	}
	fmt.Fprintf(&b, "  (R² %.4f, RMSE %.3g s, worst %.1f%%, %d points)", m.R2, m.RMSE, 100*m.MaxRelErr, m.Points)
	return b.String()
}
