package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/fabric/shm"
	"github.com/pcor-go/pcor/hws"
	"github.com/pcor-go/pcor/pcor"
)

// proc is one started process.
type proc struct {
	rank   int
	host   string
	cmd    *exec.Cmd
	stdout *prefixWriter
	stderr *prefixWriter
}

// exit is how a process ended.
type exit struct {
	rank int
	err  error
}

// startDirectory listens on opts.listen and returns the server and the
// address processes are told to reach it at.
// With watch set, the routing tables are printed as the membership changes.
func startDirectory(opts *options, stderr *lockedWriter, lost *lossLog, watch *routeWatch) (*directory.Server, string, error) {
	ln, err := net.Listen("tcp", opts.listen)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, "", fmt.Errorf("directory: %w (another job's directory? give each job its own --listen port, or port 0 for a free one)", err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("directory: %w", err)
	}
	cfg := directory.ServerConfig{JobKey: opts.jobKey, Size: opts.n, HeartbeatTimeout: opts.heartbeat}
	cfg.OnEvent = func(ev directory.Event) {
		if ev.Kind == directory.Left && ev.Reason != directory.ReasonLeft && lost != nil {
			lost.record(int(ev.Member.Proc))
		}
		if opts.verbose {
			what := "joined"
			if ev.Kind == directory.Left {
				what = "left (" + ev.Reason + ")"
			}
			stderr.writeLine([]byte(fmt.Sprintf("pcorrun: process %d on %s %s\n", ev.Member.Proc, ev.Member.Host, what)))
		}
		watch.changed(ev)
	}
	srv, err := directory.NewServer(ln, cfg)
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	if watch != nil {
		watch.start(srv)
	}
	return srv, coordAddr(ln.Addr().(*net.TCPAddr)), nil
}

// coordAddr is the address to hand out for a listener: an unspecified
// listen address is replaced by this host's name.
func coordAddr(a *net.TCPAddr) string {
	if a.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			return net.JoinHostPort(h, strconv.Itoa(a.Port))
		}
	}
	return a.String()
}

// command builds the command line of one process.
func command(opts *options, rank int, host string, env []string) []string {
	if len(opts.via) == 0 {
		return opts.prog
	}
	inner := watched(append(append([]string{"env"}, env...), opts.prog...))
	var words []string
	hasCmd := false
	for _, w := range opts.via {
		if strings.Contains(w, "{cmd}") {
			hasCmd = true
			w = strings.ReplaceAll(w, "{cmd}", shellQuote(inner))
		}
		words = append(words, strings.ReplaceAll(w, "{host}", host))
	}
	switch {
	case hasCmd:
	case joinsWords(opts.via):
		words = append(words, shellQuote(inner))
	default:
		words = append(words, inner...)
	}
	return words
}

func launch(opts *options, stdout, stderr io.Writer) int {
	out := &lockedWriter{w: stdout}
	errw := &lockedWriter{w: stderr}
	logf := func(format string, a ...any) {
		errw.writeLine([]byte(fmt.Sprintf("pcorrun: "+format+"\n", a...)))
	}
	var watch *routeWatch
	if opts.routes {
		watch = newRouteWatch(out, opts.n)
		defer watch.stop()
	}
	lost := &lossLog{at: make(map[int]time.Time)}
	srv, coord, err := startDirectory(opts, errw, lost, watch)
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer srv.Close()
	if opts.verbose {
		logf("directory at %s, job key %s", coord, directory.FormatJobKey(opts.jobKey))
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	shares, err := newCPUShares(opts.cpuShare, opts.n)
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer shares.close()

	exits := make(chan exit, opts.n)
	procs := make([]*proc, 0, opts.n)
	for rank := 0; rank < opts.n; rank++ {
		host := ""
		if len(opts.hosts) > 0 {
			host = opts.hosts[rank%len(opts.hosts)]
		}
		env := []string{
			directory.EnvCoord + "=" + coord,
			directory.EnvRank + "=" + strconv.Itoa(rank),
			directory.EnvSize + "=" + strconv.Itoa(opts.n),
			directory.EnvJobKey + "=" + directory.FormatJobKey(opts.jobKey),
			directory.EnvDirectory + "=" + directory.ServeNever,
		}
		if opts.groups != "" {
			env = append(env, hws.EnvGroups+"="+opts.groups)
		}
		if opts.vps > 0 {
			env = append(env, athread.EnvVPs+"="+strconv.Itoa(opts.vps))
		}
		if opts.prices != "" {
			env = append(env, pcor.EnvPrices+"="+opts.prices)
		}
		argv := command(opts, rank, host, env)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.WaitDelay = opts.grace
		p := &proc{rank: rank, host: host, cmd: cmd,
			stdout: &prefixWriter{prefix: []byte(fmt.Sprintf("[%d] ", rank)), out: out},
			stderr: &prefixWriter{prefix: []byte(fmt.Sprintf("[%d] ", rank)), out: errw},
		}
		cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
		var pipeR, pipeW *os.File
		if len(opts.via) > 0 {
			if pipeR, pipeW, err = watchPipe(cmd); err != nil {
				logf("rank %d: %v", rank, err)
				signalAll(procs, syscall.SIGTERM)
				waitAll(procs, exits, opts.grace)
				return 1
			}
		}
		err := startProcess(cmd)
		if pipeR != nil {
			pipeR.Close()
		}
		if err != nil {
			if pipeW != nil {
				pipeW.Close()
			}
			logf("rank %d: %v%s", rank, err, inThisDirectory(argv[0], err))
			signalAll(procs, syscall.SIGTERM)
			waitAll(procs, exits, opts.grace)
			return 1
		}
		procs = append(procs, p)
		if err := shares.place(rank, cmd.Process.Pid); err != nil {
			logf("rank %d: %v", rank, err)
		}
		go func() {
			err := cmd.Wait()
			if pipeW != nil {
				pipeW.Close()
			}
			p.stdout.Flush()
			p.stderr.Flush()
			exits <- exit{rank, err}
		}()
	}
	code := supervise(opts, procs, exits, sigs, lost, logf)
	shm.Reap("") // shared-memory segments of ranks that were killed
	return code
}

// inThisDirectory is a hint for a program named without a slash that is not
// in $PATH but in the working directory, as a program just built with go
// build is: the shell, and so pcorrun, looks for it in $PATH only.
func inThisDirectory(prog string, err error) string {
	if !errors.Is(err, exec.ErrNotFound) || strings.Contains(prog, "/") {
		return ""
	}
	if fi, err := os.Stat(prog); err != nil || fi.IsDir() {
		return ""
	}
	return fmt.Sprintf(" (for the file in this directory, write ./%s)", prog)
}

// lossLog records when the directory lost each process other than by a
// deliberate leave: a killed process's session closes at once, often
// before its exit is reaped, so this orders failures by cause.
type lossLog struct {
	mu sync.Mutex
	at map[int]time.Time
}

func (l *lossLog) record(rank int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.at[rank]; !ok {
		l.at[rank] = time.Now()
	}
}

// when is the earlier of t and the time rank was lost.
func (l *lossLog) when(rank int, t time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lt, ok := l.at[rank]; ok && lt.Before(t) {
		return lt
	}
	return t
}

// supervise waits for every process. The first failure stops the others and
// decides the exit status.
func supervise(opts *options, procs []*proc, exits chan exit, sigs chan os.Signal, lost *lossLog, logf func(string, ...any)) int {
	live := len(procs)
	// The first failure is the failed process the directory lost first,
	// or, for processes it never lost, the first whose exit was seen.
	var first *exit
	var firstAt time.Time
	// The failures already named as they happened: the last line names the
	// first failure again only when it adds something (several failures, or
	// a first failure that was not the one named).
	var named []int
	// The signal pcorrun was stopped with and passed on (Ctrl-C: SIGINT).
	var passed syscall.Signal
	stopping := false
	var kill <-chan time.Time
	stop := func() {
		if !stopping {
			stopping = true
			signalAll(procs, syscall.SIGTERM)
			kill = time.After(opts.grace)
		}
	}
	for live > 0 {
		select {
		case e := <-exits:
			live--
			procs[e.rank].cmd = nil
			if e.err == nil {
				continue
			}
			at := lost.when(e.rank, time.Now())
			if first == nil || at.Before(firstAt) {
				first, firstAt = &e, at
			}
			if opts.keepGoing {
				logf("rank %d%s %s", e.rank, onHost(procs[e.rank].host), describe(e.err))
				named = append(named, e.rank)
				continue
			}
			if !stopping {
				logf("rank %d%s %s; stopping the others", e.rank, onHost(procs[e.rank].host), describe(e.err))
				named = append(named, e.rank)
			}
			stop()
		case s := <-sigs:
			if stopping {
				signalAll(procs, syscall.SIGKILL)
				continue
			}
			passed = s.(syscall.Signal)
			logf("%v: passed on to every process (again to kill them at once)", passed)
			signalAll(procs, passed)
			stopping = true
			kill = time.After(opts.grace)
		case <-kill:
			signalAll(procs, syscall.SIGKILL)
			kill = nil
		}
	}
	if first == nil {
		return 0
	}
	// A process ended by the signal pcorrun passed on is no failure to
	// name: the line above said what stopped them.
	if killedBy(first.err) == passed && passed != 0 {
		return exitStatus(first.err)
	}
	if len(named) != 1 || named[0] != first.rank {
		logf("rank %d%s %s (first failure)", first.rank, onHost(procs[first.rank].host), describe(first.err))
	}
	return exitStatus(first.err)
}

func onHost(h string) string {
	if h == "" {
		return ""
	}
	return " (on " + h + ")"
}

// signalAll signals the process group of every live process.
func signalAll(procs []*proc, s syscall.Signal) {
	for _, p := range procs {
		if p.cmd != nil && p.cmd.Process != nil {
			syscall.Kill(-p.cmd.Process.Pid, s)
		}
	}
}

func waitAll(procs []*proc, exits chan exit, grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for range procs {
		select {
		case e := <-exits:
			procs[e.rank].cmd = nil
		case <-ctx.Done():
			signalAll(procs, syscall.SIGKILL)
			<-exits
		}
	}
}

// exitStatus maps a Wait error to pcorrun's status: the process's exit
// code, or 128 plus the signal that killed it.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		if c := ee.ExitCode(); c > 0 {
			return c
		}
	}
	return 1
}

// killedBy is the signal that ended a process, or 0.
func killedBy(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

func describe(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return fmt.Sprintf("failed: %v", err)
}

// serveDirectory runs only the directory until SIGINT or SIGTERM.
func serveDirectory(opts *options, stdout, stderr io.Writer) int {
	errw := &lockedWriter{w: stderr}
	var watch *routeWatch
	if opts.routes {
		watch = newRouteWatch(&lockedWriter{w: stdout}, opts.n)
		defer watch.stop()
	}
	srv, coord, err := startDirectory(opts, errw, nil, watch)
	if err != nil {
		fmt.Fprintf(stderr, "pcorrun: %v\n", err)
		return 1
	}
	defer srv.Close()
	// Listen for the signal before printing: whoever reads the environment
	// may signal at once.
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	fmt.Fprintf(stdout, "%s=%s\n%s=%s\n", directory.EnvCoord, coord, directory.EnvJobKey, directory.FormatJobKey(opts.jobKey))
	if opts.n > 0 {
		fmt.Fprintf(stdout, "%s=%d\n", directory.EnvSize, opts.n)
	} else {
		fmt.Fprintf(stderr, "pcorrun: no -n: the directory does not know how many processes the application has (its members' Directory().Size() is 0); give -n N for programs that read it\n")
	}
	select {
	case <-ctx.Done():
		return 0
	case <-srv.Done():
		fmt.Fprintf(stderr, "pcorrun: directory stopped: %v\n", srv.Err())
		return 1
	}
}
