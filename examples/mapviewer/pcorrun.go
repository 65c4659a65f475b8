package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// pcorrunPkg is the launcher's import path, built when no binary is given.
const pcorrunPkg = "github.com/pcor-go/pcor/cmd/pcorrun"

// findPcorrun returns a pcorrun binary: explicit if set, else $PCORRUN,
// else one built with "go build" into binDir (incremental, so it follows
// the source), else pcorrun on $PATH.
func findPcorrun(ctx context.Context, explicit, binDir string) (string, error) {
	if explicit == "" {
		explicit = os.Getenv("PCORRUN")
	}
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("pcorrun: %w", err)
		}
		return explicit, nil
	}
	var buildErr error
	if goBin, err := exec.LookPath("go"); err == nil {
		if err := os.MkdirAll(binDir, 0o755); err != nil {
			return "", err
		}
		out := filepath.Join(binDir, "pcorrun")
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, pcorrunPkg)
		msg, err := cmd.CombinedOutput()
		if err == nil {
			return out, nil
		}
		buildErr = fmt.Errorf("go build %s: %v: %s", pcorrunPkg, err, msg)
	}
	if p, err := exec.LookPath("pcorrun"); err == nil {
		return p, nil
	}
	if buildErr != nil {
		return "", fmt.Errorf("no pcorrun binary (pass --pcorrun, or run from the pcor-go module): %w", buildErr)
	}
	return "", errors.New("no pcorrun binary: pass --pcorrun PATH (go build ./cmd/pcorrun) or put pcorrun on $PATH")
}

// launchBinaries returns this program's binary and the pcorrun that runs
// it (see findPcorrun; explicit may be empty).
func launchBinaries(ctx context.Context, explicit string) (self, pcorrun string, err error) {
	if self, err = selfPath(); err != nil {
		return "", "", err
	}
	pcorrun, err = findPcorrun(ctx, explicit, filepath.Join(cacheDir(), "bin"))
	return self, pcorrun, err
}

// selfPath is this program's binary, run by pcorrun as every process.
func selfPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this program's binary: %w", err)
	}
	return exe, nil
}

// appHeartbeat is the directory's heartbeat timeout for the applications
// the commands start: how long a process may stay silent before it counts
// as gone. A process that exits or is killed closes its session and
// counts as gone at once; the timeout only catches a hung process. The
// default 2 s is too short on a machine shared with much other work,
// where a process can wait that long for a CPU.
const appHeartbeat = 10 * time.Second

// stopGrace is how long pcorrun may take to stop its processes after
// SIGINT before it is killed (its own grace is 3 s per stage).
const stopGrace = 10 * time.Second

// runPcorrun runs "pcorrun -n n flags... prog..." until it exits. It gets
// its own process group, so a terminal's Ctrl-C reaches only this
// process, which passes one SIGINT on when ctx ends; pcorrun forwards it
// to every process and waits for them. pcorrun is also told to stop if
// this process dies.
func runPcorrun(ctx context.Context, bin string, n int, flags []string, prog []string, stdout, stderr io.Writer) error {
	args := append([]string{"-n", strconv.Itoa(n), "--heartbeat-timeout", appHeartbeat.String()}, flags...)
	cmd := exec.Command(bin, append(args, prog...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting pcorrun: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return pcorrunErr(err)
	case <-ctx.Done():
	}
	cmd.Process.Signal(syscall.SIGINT)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case err := <-done:
		if err := pcorrunErr(err); err != nil {
			return err
		}
		return ctx.Err()
	case <-t.C:
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("pcorrun did not stop within %v after SIGINT; killed", stopGrace)
	}
}

func pcorrunErr(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("pcorrun: %w (its processes' messages are above)", err)
	}
	return fmt.Errorf("pcorrun: %w", err)
}
