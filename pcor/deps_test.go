package pcor_test

import (
	"os/exec"
	"strings"
	"testing"
)

// heavyDeps are import path prefixes that must stay out of the package's
// dependencies: the plotting stack (gonum/plot, its vg backends, image,
// font, LaTeX, PDF and SVG writers and the fonts embedded with them),
// which would put megabytes into every program that sends a message.
// Plots are drawn by perfmodel/perfplot, which programs import when they
// draw.
var heavyDeps = []string{
	"gonum.org/v1/plot",
	"golang.org/x/image",
	"codeberg.org/go-fonts",
	"codeberg.org/go-latex",
	"codeberg.org/go-pdf",
	"github.com/ajstarks/svgo",
	"github.com/golang/freetype",
	"git.sr.ht/~sbinet/gg",
}

// TestNoPlottingDeps lists the package's dependencies with the go tool
// and fails on any plotting package among them.
func TestNoPlottingDeps(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool:", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	var bad []string
	for dep := range strings.FieldsSeq(string(out)) {
		for _, h := range heavyDeps {
			if dep == h || strings.HasPrefix(dep, h+"/") {
				bad = append(bad, dep)
				break
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("pcor depends on %d plotting packages, first %q; plotting belongs in perfmodel/perfplot:\n%s",
			len(bad), bad[0], strings.Join(bad, "\n"))
	}
}
