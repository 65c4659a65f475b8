package main

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pcor-go/pcor/internal/cpuquota"
)

func TestMultiplyRowAndCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	n := 17
	a, b := randomMatrix(rng, n), randomMatrix(rng, n)
	c := make([]float64, n*n)
	for i := range n {
		multiplyRow(c[i*n:(i+1)*n], a[i*n:(i+1)*n], b, n)
	}
	if err := check(a, b, c, n, rng); err != nil {
		t.Fatal(err)
	}
	c[5*n+3] += 1e-3
	if err := check(a, b, c, n, rng); err == nil {
		t.Fatal("a wrong product passed the check")
	}
	m, bb, err := decodeSetup(encodeSetup(n, b))
	if err != nil || m != n || bb[n+1] != b[n+1] {
		t.Fatalf("setup round trip: %d %v", m, err)
	}
	if _, _, err := decodeSetup([]byte{1, 0, 0, 0, 0, 0, 0, 0}); err == nil {
		t.Fatal("short setup accepted")
	}
}

// The whole program through pcorrun, with the workers limited to 100, 50
// and 25% of a CPU: every strategy's product is verified, and the results
// are written.
func TestEndToEndThrottled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs pcorrun")
	}
	if err := cpuquota.Available(); err != nil {
		t.Skipf("cannot set CPU quotas here: %v", err)
	}
	dir := t.TempDir()
	for _, pkg := range []string{"../../cmd/pcorrun", "."} {
		out := filepath.Join(dir, filepath.Base(pkg))
		if pkg == "." {
			out = filepath.Join(dir, "matmul")
		}
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	// --prices off as run.sh: runs with the link-price probes on stalled
	// under load (a peer "unreachable: no answer for 30 s").
	cmd := exec.Command(filepath.Join(dir, "pcorrun"), "--prices", "off", "--heartbeat-timeout", "30s", "-n", "4",
		"--cpu-share", "1=100,2=50,3=25", filepath.Join(dir, "matmul"), "-sizes", "64,96", "-reps", "1", "-out", dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, v := range variants {
		if c := strings.Count(string(out), " "+v.name+" "); c < 2 {
			t.Errorf("%s verified %d times, want 2 (one per size):\n%s", v.name, c, out)
		}
	}
	for _, f := range []string{"RESULTS.md", "figure2.svg", "models.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
