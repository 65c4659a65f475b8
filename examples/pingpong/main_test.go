package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as pingpong when mainEnv is set, in the process
// a test starts and in the second process pingpong starts.
const mainEnv = "PINGPONG_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Started by a launcher (PCOR_RANK set), pingpong says to run it alone
// instead of starting a pair of processes in every rank.
func TestRefusesLauncher(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-n", "1")
	cmd.Env = append(os.Environ(), mainEnv+"=1", "PCOR_RANK=0")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "run it alone") {
		t.Fatalf("under a launcher: %v, output:\n%s", err, out)
	}
}
