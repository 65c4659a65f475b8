package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// startPcorrun runs the test binary as pcorrun in its own process.
func startPcorrun(t *testing.T, mode string, args ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append(args, os.Args[0])...)
	if len(args) > 0 && args[0] == "--directory-only" {
		cmd.Args = append([]string{os.Args[0]}, args...)
	}
	cmd.Env = append(os.Environ(), pcorrunMain+"=1", helperMode+"="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewScanner(out)
}

func TestSignalForwarded(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd, sc := startPcorrun(t, "wait", "-n", "2")
		for ready := 0; ready < 2 && sc.Scan(); {
			if strings.HasSuffix(sc.Text(), "ready") {
				ready++
			}
		}
		cmd.Process.Signal(sig)
		var got []string
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("%v: pcorrun ended with %v, want status 3", sig, err)
		}
		all := strings.Join(got, "\n")
		for _, want := range []string{"[0] got " + sig.String(), "[1] got " + sig.String()} {
			if !strings.Contains(all, want) {
				t.Fatalf("%v: output lacks %q:\n%s", sig, want, all)
			}
		}
	}
}

// Ctrl-C: pcorrun says it passed the interrupt on, and does not then name
// the processes it ended as failures.
func TestInterruptNotAFailure(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-n", "2", os.Args[0])
	cmd.Env = append(os.Environ(), pcorrunMain+"=1", helperMode+"=idle")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for ready := 0; ready < 2 && sc.Scan(); {
		if strings.HasSuffix(sc.Text(), "ready") {
			ready++
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	for sc.Scan() {
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGINT) {
		t.Fatalf("pcorrun ended with %v, want status %d\n%s", err, 128+int(syscall.SIGINT), stderr.String())
	}
	if !strings.Contains(stderr.String(), "pcorrun: interrupt: passed on to every process") || strings.Contains(stderr.String(), "failure") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}

func TestDirectoryOnly(t *testing.T) {
	cmd, sc := startPcorrun(t, "", "--directory-only", "--jobkey", "abc", "-n", "1")
	env := map[string]string{}
	for len(env) < 3 && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		env[k] = v
	}
	if env["PCOR_JOBKEY"] != "0000000000000abc" || env["PCOR_SIZE"] != "1" {
		t.Fatalf("printed %v", env)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := directory.Join(ctx, env["PCOR_COORD"], directory.JoinRequest{JobKey: 0xabc, Proc: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := directory.Join(ctx, env["PCOR_COORD"], directory.JoinRequest{JobKey: 0xabd, Proc: directory.AnyProc}); !errors.Is(err, directory.ErrBadJobKey) {
		t.Fatalf("wrong key: %v", err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pcorrun --directory-only: %v", err)
	}
	select {
	case <-c.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("client did not see the directory go")
	}
}

// Without -n the directory knows no size, which programs that wait for
// every process need: --directory-only says so, and how to give it.
func TestDirectoryOnlyWithoutSize(t *testing.T) {
	cmd := exec.Command(os.Args[0], "--directory-only", "--jobkey", "abc")
	cmd.Env = append(os.Environ(), pcorrunMain+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Scan()
		line <- sc.Text()
		for sc.Scan() {
		}
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, "-n N") {
			t.Fatalf("stderr's first line %q: want it to ask for -n N", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("pcorrun --directory-only without -n said nothing on stderr in 20 s")
	}
}
