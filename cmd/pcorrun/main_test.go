package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// The test binary doubles as pcorrun (pcorrunMain) and as the program it
// starts (helperMode).
const (
	pcorrunMain = "PCORRUN_TEST_MAIN"
	helperMode  = "PCORRUN_TEST_HELPER"
)

func TestMain(m *testing.M) {
	if os.Getenv(pcorrunMain) != "" {
		os.Unsetenv(pcorrunMain)
		if os.Getenv(churnThreads) != "" {
			os.Unsetenv(churnThreads)
			go churn()
		}
		main()
	}
	if mode := os.Getenv(helperMode); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

// helper is the program pcorrun starts in the tests:
//
//	env            print the PCOR_ variables and exit 0
//	fail:R:C       rank R exits with code C after a moment; others wait for a signal
//	wait           print "ready", wait for SIGINT/SIGTERM, print it and exit 3
//	join           join the directory and wait for all PCOR_SIZE members
//	routes         join as a pcor node on a per-rank chain of networks, print the node's routes
//	stubborn       print "pid N", ignore SIGINT, SIGTERM and SIGHUP, and sleep a minute
//	idle           print "ready" and sleep 20 s, ended by any signal that ends a process
func helper(mode string) int {
	rank, _ := strconv.Atoi(os.Getenv("PCOR_RANK"))
	switch {
	case mode == "env":
		for _, k := range []string{"PCOR_COORD", "PCOR_RANK", "PCOR_SIZE", "PCOR_JOBKEY", "PCOR_GROUPS", "ATHREAD_VPS", "PCOR_PRICES"} {
			fmt.Printf("%s=%s\n", k, os.Getenv(k))
		}
		fmt.Fprintf(os.Stderr, "stderr line\n")
		fmt.Printf("no newline")
		return 0
	case strings.HasPrefix(mode, "fail:"):
		var r, code int
		fmt.Sscanf(mode, "fail:%d:%d", &r, &code)
		if rank == r {
			// Fail only once every other rank listens for its signal, so
			// that a slow start cannot make a rank die of the signal
			// before it can report it.
			size, _ := strconv.Atoi(os.Getenv("PCOR_SIZE"))
			dir := os.Getenv(readyDir)
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
				if n, _ := filepath.Glob(filepath.Join(dir, "ready.*")); len(n) >= size-1 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			return code
		}
		return waitSignal()
	case mode == "wait":
		return waitSignal()
	case mode == "routes":
		return routesHelper()
	case mode == "idle":
		fmt.Println("ready")
		time.Sleep(20 * time.Second)
		return 0
	case mode == "stubborn":
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		fmt.Printf("pid %d\n", os.Getpid())
		time.Sleep(time.Minute)
		return 0
	case mode == "join":
		env, err := directory.FromEnv()
		if err != nil {
			fmt.Println(err)
			return 1
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, srv, err := directory.Bootstrap(ctx, env, directory.JoinRequest{}, directory.ServerConfig{})
		if err != nil {
			fmt.Println(err)
			return 1
		}
		if srv != nil {
			fmt.Println("served the directory although pcorrun does")
			return 1
		}
		defer c.Close()
		if err := c.Wait(ctx, env.Size); err != nil {
			fmt.Println(err)
			return 1
		}
		from := "?"
		if u, err := net.Dial("udp", env.Coord); err == nil {
			from = u.LocalAddr().(*net.UDPAddr).IP.String()
			u.Close()
		}
		fmt.Printf("proc %d sees %d members from %s\n", c.Proc(), len(c.Members()), from)
		// Stay a moment so the last process to join still finds everyone
		// when it looks.
		time.Sleep(time.Second)
		return 0
	}
	return 99
}

// readyDir names the directory where waiting helpers leave a file once
// they listen for signals.
const readyDir = "PCORRUN_TEST_READY"

func waitSignal() int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	fmt.Println("ready")
	if dir := os.Getenv(readyDir); dir != "" {
		os.WriteFile(filepath.Join(dir, "ready."+os.Getenv("PCOR_RANK")), nil, 0o644)
	}
	select {
	case s := <-sigs:
		fmt.Println("got", s)
		return 3
	case <-time.After(20 * time.Second):
		fmt.Println("no signal came")
		return 4
	}
}

// runHelper runs pcorrun in-process on the test binary in helper mode.
func runHelper(t *testing.T, mode string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv(helperMode, mode)
	t.Setenv(readyDir, t.TempDir())
	var out, errb bytes.Buffer
	args = append(args, os.Args[0])
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestEnvAndPrefixes(t *testing.T) {
	code, out, errs := runHelper(t, "env", "-n", "3", "--jobkey", "00000000000000ab")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for rank := 0; rank < 3; rank++ {
		for _, want := range []string{
			fmt.Sprintf("[%d] PCOR_RANK=%d\n", rank, rank),
			fmt.Sprintf("[%d] PCOR_SIZE=3\n", rank),
			fmt.Sprintf("[%d] PCOR_JOBKEY=00000000000000ab\n", rank),
			fmt.Sprintf("[%d] PCOR_COORD=127.0.0.1:", rank),
			fmt.Sprintf("[%d] no newline\n", rank),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		if !strings.Contains(errs, fmt.Sprintf("[%d] stderr line\n", rank)) {
			t.Errorf("stderr lacks rank %d's line:\n%s", rank, errs)
		}
	}
}

// --groups reaches every process as PCOR_GROUPS.
func TestGroupsFlag(t *testing.T) {
	code, out, errs := runHelper(t, "env", "-n", "2", "--groups", "0;1")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for rank := range 2 {
		if want := fmt.Sprintf("[%d] PCOR_GROUPS=0;1\n", rank); !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

// --vps reaches every process as ATHREAD_VPS.
func TestVPsFlag(t *testing.T) {
	code, out, errs := runHelper(t, "env", "-n", "2", "--vps", "3")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for rank := range 2 {
		if want := fmt.Sprintf("[%d] ATHREAD_VPS=3\n", rank); !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

// --prices reaches every process as PCOR_PRICES; a value FromEnv would
// refuse is refused at once, as the flag's.
func TestPricesFlag(t *testing.T) {
	code, out, errs := runHelper(t, "env", "-n", "2", "--prices", "10s")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for rank := range 2 {
		if want := fmt.Sprintf("[%d] PCOR_PRICES=10s\n", rank); !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// The error names the flag and its value, not the variable pcorrun
	// passes them in.
	if code, _, errs := runHelper(t, "env", "-n", "1", "--prices", "often"); code == 0 ||
		!strings.Contains(errs, `--prices "often"`) || strings.Contains(errs, "PCOR_PRICES") {
		t.Errorf("--prices often: exit %d, stderr %q", code, errs)
	}
}

func TestRandomJobKeyPerRun(t *testing.T) {
	key := func() string {
		_, out, _ := runHelper(t, "env", "-n", "1")
		for _, l := range strings.Split(out, "\n") {
			if k, ok := strings.CutPrefix(l, "[0] PCOR_JOBKEY="); ok {
				return k
			}
		}
		t.Fatalf("no key in %q", out)
		return ""
	}
	if a, b := key(), key(); a == b || len(a) != 16 {
		t.Fatalf("keys %q and %q", a, b)
	}
}

func TestFailureStopsAll(t *testing.T) {
	start := time.Now()
	code, out, errs := runHelper(t, "fail:2:7", "-n", "4")
	if code != 7 {
		t.Fatalf("exit %d, want 7\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "pcorrun: rank 2 exited with status 7") {
		t.Fatalf("no message naming rank 2:\n%s", errs)
	}
	// The failure is named once: the ranks stopped because of it are not
	// failures of their own, so there is nothing to add at the end.
	if n := strings.Count(errs, "rank 2 exited"); n != 1 {
		t.Errorf("rank 2's failure named %d times, want once:\n%s", n, errs)
	}
	for _, r := range []int{0, 1, 3} {
		if !strings.Contains(out, fmt.Sprintf("[%d] got terminated", r)) {
			t.Errorf("rank %d was not terminated:\n%s", r, out)
		}
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

// With --keep-going every failure is named as it happens; a lone failure is
// not named a second time at the end.
func TestKeepGoingNamesFailureOnce(t *testing.T) {
	code, out, errs := runHelper(t, "fail:0:5", "-n", "1", "--keep-going")
	if code != 5 {
		t.Fatalf("exit %d, want 5\n%s%s", code, out, errs)
	}
	if n := strings.Count(errs, "rank 0 exited with status 5"); n != 1 {
		t.Errorf("rank 0's failure named %d times, want once:\n%s", n, errs)
	}
}

func TestDirectoryMembership(t *testing.T) {
	code, out, errs := runHelper(t, "join", "-n", "4", "-v")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for r := 0; r < 4; r++ {
		if !strings.Contains(out, fmt.Sprintf("[%d] proc %d sees 4 members", r, r)) {
			t.Errorf("rank %d did not see everyone:\n%s", r, out)
		}
		if !strings.Contains(errs, fmt.Sprintf("pcorrun: process %d on", r)) {
			t.Errorf("no membership line for %d:\n%s", r, errs)
		}
	}
}

func TestBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-n", "0", "x"},
		{"-n", "2"},
		{"-n", "2", "--hosts", "a,b", "x"},
		{"-n", "2", "--vps", "-1", "x"},
		{"-n", "2", "--via", "'unterminated", "x"},
		{"-n", "2", "--jobkey", "zz", "x"},
		{"--directory-only", "x"},
		{"-n", "2", "--groups", "0;0", "x"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-n", "1", "/nonexistent/program"}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "rank 0") {
		t.Fatalf("missing program: exit %d, %s", code, errb.String())
	}
}

// A program named without a slash is looked for in $PATH; one that is in
// the working directory instead (just built) is named with ./ in the error.
func TestProgramInThisDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	const prog = "pcorrun-test-prog"
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"-n", "1", prog}, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "write ./"+prog) {
		t.Fatalf("exit %d, stderr %q: want the error to point at ./%s", code, errb.String(), prog)
	}
	// A program found nowhere gets no hint.
	errb.Reset()
	if code := run([]string{"-n", "1", prog + "-absent"}, &out, &errb); code == 0 || strings.Contains(errb.String(), "write ./") {
		t.Fatalf("absent program: exit %d, stderr %q", code, errb.String())
	}
}

func TestCommandTemplate(t *testing.T) {
	words, err := splitWords(`ssh -o "Batch Mode=yes" {host} 'a b' c\ d`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ssh", "-o", "Batch Mode=yes", "{host}", "a b", "c d"}
	if fmt.Sprint(words) != fmt.Sprint(want) {
		t.Fatalf("%q", words)
	}
	o := &options{via: []string{"ip", "netns", "exec", "{host}"}, prog: []string{"./ring", "x y"}}
	got := command(o, 1, "ns2", []string{"PCOR_RANK=1"})
	want = append([]string{"ip", "netns", "exec", "ns2"}, watched([]string{"env", "PCOR_RANK=1", "./ring", "x y"})...)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%q", got)
	}
	watchdog := "sh -c " + shellQuote([]string{watchdogScript}) + " " + watchdogName
	o.via = []string{"ssh", "{host}", "cd /w && {cmd}"}
	got = command(o, 1, "h", []string{"PCOR_RANK=1"})
	if got[2] != `cd /w && `+watchdog+` env PCOR_RANK=1 ./ring 'x y'` {
		t.Fatalf("%q", got)
	}
	// ssh joins its arguments into one command line: pcorrun quotes.
	o.via = []string{"/usr/bin/ssh", "{host}"}
	got = command(o, 1, "h", []string{"PCOR_RANK=1"})
	if len(got) != 3 || got[2] != watchdog+` env PCOR_RANK=1 ./ring 'x y'` {
		t.Fatalf("%q", got)
	}
	if shellQuote([]string{"it's"}) != `'it'\''s'` {
		t.Fatal(shellQuote([]string{"it's"}))
	}
}

// A program given without -n is told that -n is missing.
func TestMissingCount(t *testing.T) {
	_, err := parseFlags([]string{"./ring"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-n N") || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("pcorrun ./ring: %v; want -n named as missing", err)
	}
}

// A bad --jobkey is reported as the flag's value, not as the environment
// variable pcorrun passes the key in.
func TestBadJobKeyNamesFlag(t *testing.T) {
	_, err := parseFlags([]string{"-n", "2", "--jobkey", "zz", "x"}, io.Discard)
	if err == nil {
		t.Fatal("--jobkey zz accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, "--jobkey") || strings.Contains(msg, "PCOR_JOBKEY") || !strings.Contains(msg, `"zz"`) {
		t.Errorf("error %q: want it to name --jobkey and its value, not PCOR_JOBKEY", msg)
	}
}
