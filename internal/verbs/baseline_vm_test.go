package verbs

import (
	"testing"
)

func TestBaselineRuns(t *testing.T) {
	requireDevice(t)
	lat, err := MeasureSendLatency(BaselineConfig{}, 2, 200)
	if err != nil {
		t.Fatal(err)
	}
	if lat.Min <= 0 || lat.Min > lat.Median || lat.Median > lat.P99 {
		t.Fatalf("implausible latency %v", lat)
	}
	t.Log(lat)
	bw, err := MeasureWriteBandwidth(BaselineConfig{}, 64<<10, 200, 16)
	if err != nil {
		t.Fatal(err)
	}
	if bw.MBps() <= 0 {
		t.Fatalf("implausible bandwidth %v", bw)
	}
	t.Log(bw)
}

// Benchmarks reporting the raw verbs baseline (run in the VM with
// -test.bench Baseline -test.benchtime 1x).
func BenchmarkBaselineSendLat(b *testing.B) {
	requireDevice(b)
	r, err := MeasureSendLatency(BaselineConfig{}, 2, 1000*b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(r.Median.Nanoseconds())/1e3, "us-typical")
	b.ReportMetric(float64(r.Avg.Nanoseconds())/1e3, "us-avg")
	b.ReportMetric(float64(r.P99.Nanoseconds())/1e3, "us-p99")
}

func BenchmarkBaselineWriteBW(b *testing.B) {
	requireDevice(b)
	r, err := MeasureWriteBandwidth(BaselineConfig{}, 64<<10, 1000*b.N, 128)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.MBps(), "MB/s")
}

// BenchmarkCQPollEmpty is the cost of a poll of an empty completion
// queue's ring (the raw verbs ends' busy poll, without their yield every
// 256th): set beside BenchmarkPollEmpty in fabric/rdma.
func BenchmarkCQPollEmpty(b *testing.B) {
	d := requireDevice(b)
	ctx, err := Open(d)
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Close()
	cq, err := ctx.CreateCQ(64, false)
	if err != nil {
		b.Fatal(err)
	}
	defer cq.Close()
	wcs := make([]WC, 16)
	for b.Loop() {
		if n := cq.Poll(wcs); n != 0 {
			b.Fatalf("poll of an empty queue: %d", n)
		}
	}
}
