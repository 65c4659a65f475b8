package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/pcor-go/pcor/bench/internal/usage"
)

// request is one line from the near side to a peer process.
type request struct {
	Op  string `json:"op"` // start, go, stop, usage, counters
	Job *Job   `json:"job,omitempty"`
	N   int    `json:"n,omitempty"`
}

// reply is one line back.
type reply struct {
	Addr  string        `json:"addr,omitempty"`
	Err   string        `json:"err,omitempty"`
	Usage *usage.Counts `json:"usage,omitempty"`

	Counters map[string]uint64 `json:"counters,omitempty"`
}

// Process is a Host in a second process: this program re-executed with
// EnvVar set.
type Process struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	mu   sync.Mutex // one exchange at a time
	done chan struct{}
	werr error
}

// Spawn starts the peer process (this executable re-executed). With
// traceDir not empty the peer writes a runtime trace of its whole life
// into that directory (see TraceFile).
func Spawn(traceDir string) (*Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), EnvVar+"=1", TraceEnvVar+"="+traceDir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("peer: start %s: %w", exe, err)
	}
	p := &Process{cmd: cmd, in: in, out: bufio.NewScanner(out), done: make(chan struct{})}
	go func() {
		p.werr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid is the peer's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// exchange sends one request and waits for its reply or ctx.
func (p *Process) exchange(ctx context.Context, req request) (reply, error) {
	if err := ctx.Err(); err != nil {
		return reply{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b, _ := json.Marshal(req)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return reply{}, fmt.Errorf("peer: write: %w", err)
	}
	type res struct {
		r   reply
		err error
	}
	ch := make(chan res, 1)
	go func() {
		if !p.out.Scan() {
			err := p.out.Err()
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			ch <- res{err: fmt.Errorf("peer: process ended: %w", err)}
			return
		}
		var r reply
		if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
			ch <- res{err: fmt.Errorf("peer: bad reply %q: %w", p.out.Text(), err)}
			return
		}
		ch <- res{r: r}
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			return reply{}, x.err
		}
		if x.r.Err != "" {
			return x.r, &RemoteError{Op: req.Op, Msg: x.r.Err}
		}
		return x.r, nil
	case <-ctx.Done():
		// The reader goroutine is left holding the stream; the process is
		// no longer usable, so end it (which ends the reader).
		p.kill()
		<-ch
		return reply{}, ctx.Err()
	}
}

// RemoteError is an error reported by the peer process.
type RemoteError struct{ Op, Msg string }

func (e *RemoteError) Error() string { return "peer " + e.Op + ": " + e.Msg }

// Start starts a job in the peer.
func (p *Process) Start(ctx context.Context, job Job) (string, error) {
	r, err := p.exchange(ctx, request{Op: "start", Job: &job})
	return r.Addr, err
}

// Go runs a step of the peer's job.
func (p *Process) Go(ctx context.Context, n int) error {
	_, err := p.exchange(ctx, request{Op: "go", N: n})
	return err
}

// Usage is what the peer process has spent so far (CPU time, context
// switches, system calls), for per-message figures.
func (p *Process) Usage(ctx context.Context) (usage.Counts, error) {
	r, err := p.exchange(ctx, request{Op: "usage"})
	if err == nil && r.Usage == nil {
		err = errors.New("peer: no usage in reply")
	}
	if err != nil {
		return usage.Counts{}, err
	}
	return *r.Usage, nil
}

// Counters are the counters of the peer's job (see Counted), or nil.
func (p *Process) Counters(ctx context.Context) (map[string]uint64, error) {
	r, err := p.exchange(ctx, request{Op: "counters"})
	return r.Counters, err
}

// Stop ends the peer's job.
func (p *Process) Stop(ctx context.Context) error {
	_, err := p.exchange(ctx, request{Op: "stop"})
	return err
}

// reapWait bounds the wait for a killed peer process to end.
const reapWait = 30 * time.Second

func (p *Process) kill() {
	p.cmd.Process.Kill()
}

// Close ends the peer process: it exits when its stdin closes; after five
// seconds it is killed. A process that SIGKILL does not end within
// reapWait (stuck in the kernel) is left behind, and Close says so.
func (p *Process) Close() error {
	p.in.Close()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.kill()
		select {
		case <-p.done:
		case <-time.After(reapWait):
			return fmt.Errorf("peer: process %d did not exit, nor end %v after SIGKILL (stuck in the kernel?)", p.Pid(), reapWait)
		}
		return errors.New("peer: process did not exit; killed")
	}
	var ee *exec.ExitError
	if errors.As(p.werr, &ee) {
		return fmt.Errorf("peer: process: %w", p.werr)
	}
	return nil
}
