package perfmodel

import (
	"bytes"
	"math"
	"reflect"
	"testing"
)

// FuzzRead: a model file (written by another run, perhaps edited by hand)
// is checked on reading: Read never panics, and a set it accepts can be
// used (Predict, String, Extrapolates at any point) and is written back to
// a set that reads the same.
func FuzzRead(f *testing.F) {
	s := &Set{}
	s.Put("linear", &Model{Form: Linear(), Coef: []float64{1e-6, 2e-9}, SE: []float64{1e-7, 1e-10},
		Cov: [][]float64{{1e-14, 0}, {0, 1e-20}}, Sigma: 0.01, R2: 0.99, Points: 10, NMin: 1, NMax: 1 << 20})
	s.Put("amdahl", &Model{Form: Form{{N: 0, P: 0}, {N: 1, P: -1}}, Coef: []float64{0.5, 1e-3}, Weighting: Relative, Sigma: 0.05})
	s.Observations = map[string][]Observation{"linear": {{N: 1, P: 1, T: 1e-6}}}
	var b bytes.Buffer
	if err := s.Write(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"models":{"x":null}}`))
	f.Add([]byte(`{"models":{"x":{"form":[{"n":1,"p":-9223372036854775808}],"coef":[1],"cov":[[1]]}}}`))
	f.Add([]byte(`{"models":{"x":{"form":[{"n":1}],"coef":[1,2]}}}`))
	f.Add([]byte(`{"models":{"x":{"form":[{"n":1},{"p":1}],"coef":[1,2],"cov":[[1],[1,2]]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, m := range s.Models {
			for _, pt := range [][2]float64{{0, 0}, {1, 1}, {1e6, 64}, {math.Inf(1), -1}, {math.NaN(), 2}} {
				m.Predict(pt[0], pt[1])
				m.Extrapolates(pt[0], pt[1])
			}
			_ = m.String()
		}
		var out bytes.Buffer
		if err := s.Write(&out); err != nil {
			return // a NaN or an infinity is not JSON: Write says so
		}
		again, err := Read(&out)
		if err != nil {
			t.Fatalf("a set read does not read again once written: %v\n%s", err, out.Bytes())
		}
		if len(again.Models) != len(s.Models) {
			t.Fatalf("%d models written, %d read back", len(s.Models), len(again.Models))
		}
		for name, m := range s.Models {
			if !reflect.DeepEqual(m.Form, again.Models[name].Form) {
				t.Fatalf("model %q: form %v written, %v read back", name, m.Form, again.Models[name].Form)
			}
		}
	})
}
