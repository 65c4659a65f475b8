package perfmodel_test

import (
	"fmt"

	"github.com/pcor-go/pcor/perfmodel"
)

// Time a message-sized region, drop the anomalies, fit T(m) = a + b·m and
// predict a size that was not measured.
func Example() {
	var rec perfmodel.Recorder
	send := rec.Region("send")
	for _, m := range []float64{0, 1000, 2000, 4000} {
		for i := range 5 {
			t := 50e-6 + m*1e-8
			if i == 2 && m == 2000 {
				t *= 10 // preempted: an anomaly
			}
			send.Add(perfmodel.Sample{N: m, T: t})
		}
	}
	obs := perfmodel.Summarize(send.Samples(), perfmodel.Rule{})
	m, err := perfmodel.Fit(perfmodel.Linear(), obs, perfmodel.Absolute)
	if err != nil {
		panic(err)
	}
	e := m.Predict(8000, 0)
	fmt.Printf("a = %.3g s, b = %.3g s/byte, T(8000) = %.3g s, dropped %d\n", m.Coef[0], m.Coef[1], e.T, obs[2].Dropped)
	// Output: a = 5e-05 s, b = 1e-08 s/byte, T(8000) = 0.00013 s, dropped 1
}
