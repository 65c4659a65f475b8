package testdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The directories of test processes that are gone are removed with what
// they hold; those of processes alive, of this one, made recently in the
// old form, or named otherwise are left.
func TestSweep(t *testing.T) {
	base := t.TempDir()
	const prefix = "pcor-x-test-"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	gone := cmd.Process.Pid // exited and waited for
	mk := func(name string) string {
		d := filepath.Join(base, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "pcor-seg"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	dead := mk(prefix + strconv.Itoa(gone) + "-123")
	own := mk(prefix + strconv.Itoa(os.Getpid()) + "-456")
	parent := mk(prefix + strconv.Itoa(os.Getppid()) + "-789")
	oldLegacy := mk(prefix + "1475988224")
	old := time.Now().Add(-2 * legacyAge)
	if err := os.Chtimes(oldLegacy, old, old); err != nil {
		t.Fatal(err)
	}
	newLegacy := mk(prefix + "99")
	other := mk("pcor-y-test-" + strconv.Itoa(gone) + "-1")

	Sweep(base, prefix)
	for _, c := range []struct {
		dir  string
		kept bool
	}{{dead, false}, {own, true}, {parent, true}, {oldLegacy, false}, {newLegacy, true}, {other, true}} {
		_, err := os.Stat(c.dir)
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(c.dir), kept, c.kept)
		}
	}

	d, err := Make(base, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if want := prefix + strconv.Itoa(os.Getpid()) + "-"; filepath.Dir(d) != base || len(filepath.Base(d)) <= len(want) || filepath.Base(d)[:len(want)] != want {
		t.Errorf("Make: %s, want %s<digits> in %s", d, want, base)
	}
}
