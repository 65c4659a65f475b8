package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric/rdma"
)

// requireRDMA skips the test where no RDMA device exists.
func requireRDMA(t *testing.T) {
	t.Helper()
	if err := rdma.Probe(rdma.Config{}); err != nil {
		t.Skipf("no RDMA device here (%v): run in the soft-RoCE VM, see bench/rdma-vm.sh", err)
	}
}

func TestRDMAWithoutDeviceFailsClearly(t *testing.T) {
	if err := rdma.Probe(rdma.Config{}); err == nil {
		t.Skip("this machine has an RDMA device")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	err := run(ctx, append([]string{"throughput", "--fabric", "rdma", "--sizes", "64K"}, tiny...), &out, &errb)
	if !errors.Is(err, rdma.ErrNoDevice) || !strings.Contains(err.Error(), "--fabric rdma needs an RDMA device") {
		t.Fatalf("err = %v, want ErrNoDevice with an explanation", err)
	}
	if out.Len() != 0 {
		t.Errorf("output despite the error:\n%s", out.String())
	}
}

// TestRDMAVerbsBaseline runs pcor over RDMA between two processes beside
// the raw verbs ping-pong and write stream, with tiny counts.
func TestRDMAVerbsBaseline(t *testing.T) {
	requireRDMA(t)
	r := runJSON(t, "roundtrip", "--fabric", "rdma", "--placement", "procs", "--sizes", "2,4K")
	if len(r.Baselines) != 1 || r.Baselines[0] != "verbs" {
		t.Fatalf("roundtrip baselines %v, want [verbs]", r.Baselines)
	}
	checkPoints(t, r, sizeKeys(2, 4096), []string{"verbs", "pcor/blocking"}, []string{"verbs"})

	r = runJSON(t, "throughput", "--fabric", "rdma", "--placement", "procs", "--sizes", "64K")
	if len(r.Baselines) != 1 || r.Baselines[0] != "verbs" {
		t.Fatalf("throughput baselines %v, want [verbs]", r.Baselines)
	}
	checkPoints(t, r, sizeKeys(64<<10), []string{"verbs", "pcor/blocking"}, []string{"verbs"})
}

// Each repetition of a pcor series is divided by the verbs repetition of
// the same turn, not by the verbs median: with the verbs figures 1, 100
// and 10 and pcor's 2, 200 and 30, each turn gives 2, 2 and 3 (median 2),
// where the ratio of the medians is 3.
func TestPairedNotes(t *testing.T) {
	col := newCollector()
	for i, v := range []float64{1, 100, 10} {
		col.add("verbs", 2, 0, sampled{xs: []float64{v}}, nil)
		col.add("pcor/blocking", 2, 0, sampled{xs: []float64{[]float64{2, 2, 3}[i] * v}}, nil)
	}
	col.add("udp", 2, 0, sampled{xs: []float64{5}}, nil)
	notes := col.pairedNotes("verbs")
	want := "paired pcor/blocking/verbs at 2: median 2.00x, range [2.00, 3.00], 3 repetitions"
	if len(notes) != 1 || notes[0] != want {
		t.Fatalf("paired notes %q, want [%q]", notes, want)
	}
	if n := newCollector().pairedNotes("verbs"); len(n) != 0 {
		t.Fatalf("notes without a verbs series: %q", n)
	}
}
