package athreadmain_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bin holds pcorrun and the case studies, built once.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "athreadexamples")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	bin = dir
	code := 1
	out, err := exec.Command("go", "build", "-o", dir, "github.com/pcor-go/pcor/cmd/pcorrun",
		"github.com/pcor-go/pcor/examples/tree", "github.com/pcor-go/pcor/examples/fib",
		"github.com/pcor-go/pcor/examples/nqueens", "github.com/pcor-go/pcor/examples/align").CombinedOutput()
	if err != nil {
		fmt.Printf("building: %v\n%s", err, out)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

var cases = []struct {
	name string
	args []string
	want string // printed by process 0 on success (each checks its result)
}{
	{"tree", []string{"-levels", "7", "-work", "2000"}, "tree of 7 levels: 0x"},
	{"fib", []string{"-n", "22", "-cutoff", "8"}, "fib(22) = 17711 in"},
	{"nqueens", []string{"-n", "9"}, "9 queens: 352 solutions in"},
	{"align", []string{"-len", "700", "-block", "50"}, "alignment score"},
	{"align", []string{"-len", "700", "-block", "50", "-mode", "pipelined"}, "alignment score"},
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, name), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// Each case study runs alone and checks its own result.
func TestAlone(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := run(t, c.name, c.args...)
			if !strings.HasPrefix(out, c.want) {
				t.Fatalf("got:\n%s", out)
			}
		})
	}
}

// Each case study runs as four processes under pcorrun, moving threads
// between them.
func TestPcorrun(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"-n", "4", filepath.Join(bin, c.name), "-counters"}, c.args...)
			out := run(t, "pcorrun", args...)
			if !strings.Contains(out, "[0] "+c.want) {
				t.Fatalf("got:\n%s", out)
			}
			if !strings.Contains(out, "RemoteSteals:") {
				t.Fatalf("no counters:\n%s", out)
			}
		})
	}
}

// The tree writes its task graph and trace.
func TestTreeFiles(t *testing.T) {
	dir := t.TempDir()
	dot, trace := filepath.Join(dir, "tree.dot"), filepath.Join(dir, "tree.json")
	run(t, "tree", "-levels", "3", "-work", "10", "-dot", dot, "-trace", trace)
	d, err := os.ReadFile(dot)
	if err != nil {
		t.Fatal(err)
	}
	// main, the run thread, and 1 + 2 + 4 + 8 tree threads; inner tree
	// threads have 5 tasks.
	if n := strings.Count(string(d), "subgraph cluster_t"); n != 17 {
		t.Fatalf("%d threads in the graph:\n%s", n, d)
	}
	if !strings.Contains(string(d), "t2_4") || !strings.Contains(string(d), "style=dotted") {
		t.Fatalf("graph without the joins:\n%s", d)
	}
	tr, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tr), `"ph":"X"`) || !strings.Contains(string(tr), `"VP 0"`) {
		t.Fatalf("trace:\n%.500s", tr)
	}
}
