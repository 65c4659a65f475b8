package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"math"
	"strings"
	"testing"
)

func sample() *Result {
	r := &Result{Command: "roundtrip", Placement: "procs", Fabric: "udp", Unit: "us", Baselines: []string{"udp"}}
	for _, m := range []int{1, 1024, 65536} {
		// pcor: 10 µs + m/1000 one way; udp: 8 µs + m/2000.
		r.AddSamples("pcor/blocking", m, 0, []float64{2 * (10 + float64(m)/1000), 2 * (10 + float64(m)/1000)}, nil)
		r.AddSamples("udp", m, 0, []float64{2 * (8 + float64(m)/2000)}, nil)
	}
	r.AddSamples("udp", 1<<20, 0, nil, errors.New("lost"))
	r.Finish()
	return r
}

func TestFinishRatiosAndFit(t *testing.T) {
	r := sample()
	v, ok := r.Ratio("pcor/blocking", "udp", 1, 0)
	want := (10 + 0.001) / (8 + 0.0005)
	if !ok || math.Abs(v-want) > 1e-9 {
		t.Errorf("ratio at 1 B = %v %v, want %v", v, ok, want)
	}
	if _, ok := r.Ratio("pcor/blocking", "udp", 1<<20, 0); ok {
		t.Error("ratio against a failed point")
	}
	if len(r.Fits) != 2 || math.Abs(r.Fits[0].A-10) > 1e-6 || math.Abs(r.Fits[0].B-1000) > 1e-3 {
		t.Errorf("fits = %+v", r.Fits)
	}
}

func TestContentionRatioToBest(t *testing.T) {
	r := &Result{Command: "contention", Unit: "msg/s"}
	r.AddSamples("pcor/blocking", 64, 1, []float64{100}, nil)
	r.AddSamples("pcor/blocking", 64, 1000, []float64{80}, nil)
	r.Finish()
	if v, ok := r.Ratio("pcor/blocking", "best", 64, 1000); !ok || v != 0.8 {
		t.Errorf("ratio to best = %v %v", v, ok)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "0.80x") || !strings.Contains(b.String(), "1000") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestWriters(t *testing.T) {
	r := sample()
	var tb bytes.Buffer
	if err := WriteTable(&tb, r); err != nil {
		t.Fatal(err)
	}
	out := tb.String()
	for _, s := range []string{"64K", "blocking/udp", "Hockney fit", "lost", "1.25x"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	var jb bytes.Buffer
	if err := WriteJSON(&jb, []*Result{r}); err != nil {
		t.Fatal(err)
	}
	var back []*Result
	if err := json.Unmarshal(jb.Bytes(), &back); err != nil || len(back) != 1 || len(back[0].Points) != len(r.Points) {
		t.Fatalf("json round trip: %v", err)
	}
	var cb bytes.Buffer
	if err := WriteCSV(&cb, []*Result{r}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cb).ReadAll()
	if err != nil || len(recs) != 1+len(r.Points) {
		t.Fatalf("csv: %d records, %v", len(recs), err)
	}
	var sb bytes.Buffer
	tp := &Result{Command: "throughput", Placement: "same", Fabric: "udp", Unit: "MB/s"}
	tp.AddSamples("pcor/polling", 1, 0, []float64{3}, nil)
	tp.AddSamples("pcor/polling", 1<<21, 0, []float64{3000}, nil)
	if err := WriteSVG(&sb, []*Result{r, tp}); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(sb.Bytes(), new(struct{})); err != nil {
		t.Fatalf("svg is not well-formed XML: %v", err)
	}
	if strings.Count(sb.String(), "<polyline") != 3 || !strings.Contains(sb.String(), "2M") {
		t.Errorf("svg curves or labels missing")
	}
	if err := WriteSVG(&sb, []*Result{{Command: "rate"}}); !errors.Is(err, ErrNothingToPlot) {
		t.Errorf("plot of rate only: %v", err)
	}
}

func TestFitJSONInfinite(t *testing.T) {
	r := &Result{Command: "roundtrip", Unit: "us"}
	r.AddSamples("chan", 1, 0, []float64{1}, nil)
	r.AddSamples("chan", 2, 0, []float64{1}, nil)
	r.Finish()
	if len(r.Fits) != 1 || !math.IsInf(r.Fits[0].B, 1) {
		t.Fatalf("fits %+v", r.Fits)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, []*Result{r}); err != nil {
		t.Fatal(err)
	}
	var back []*Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || !math.IsInf(back[0].Fits[0].B, 1) || math.Abs(back[0].Fits[0].A-0.5) > 1e-12 {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}
