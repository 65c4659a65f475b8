package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommand(t *testing.T) {
	png := filepath.Join(t.TempDir(), "steals.png")
	var out, errb bytes.Buffer
	args := []string{"-dag", "fib,tree", "-groups", "2", "-per", "2,4", "-policies", "random,hws", "-plot", png}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(out.String(), "\n")
	rows := 0
	for _, l := range lines {
		if strings.Contains(l, "fib(36)") || strings.Contains(l, "tree(4^7)") {
			rows++
		}
	}
	if rows != 8 {
		t.Fatalf("%d rows, want 8:\n%s", rows, out.String())
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Fatalf("plot: %v", err)
	}
	// The same flags print the same table.
	var again bytes.Buffer
	run(args[:len(args)-2], &again, &errb)
	if !strings.HasPrefix(out.String(), again.String()) {
		t.Fatalf("two runs differ:\n%s\n%s", out.String(), again.String())
	}
	for _, bad := range [][]string{{"-dag", "nope"}, {"-groups", "0"}, {"-policies", "x"}, {"extra"}} {
		if code := run(bad, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}

// Only failures of a job's start-up are run again.
func TestStartupFailure(t *testing.T) {
	for msg, want := range map[string]bool{
		"[3] hws worker: athread: start-up with process 5: pcor: process 5 down: heartbeat lost": true,
		"[3] hws worker: directory: waiting for 6 members (have 3): directory: session lost":     true,
		"[0] hws worker: fib(32) = 1, want 2178309":                                              false,
		"[0] hws worker: counters of the other processes: context deadline exceeded":             false,
	} {
		if got := startupFailure(errors.New(msg)); got != want {
			t.Errorf("startupFailure(%q) = %v", msg, got)
		}
	}
}

// hws -h names the real runs beside the simulator's flags: a subcommand
// that -h does not mention cannot be found.
func TestUsageNamesReal(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"hws real", "-policies"} {
		if !strings.Contains(errb.String(), want) {
			t.Fatalf("hws -h does not mention %q:\n%s", want, errb.String())
		}
	}
}
