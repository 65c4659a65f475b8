// Package peer runs the far side of a benchmark: in this process (for the
// same-process placement) or in a second process, the benchmark binary
// re-executed, driven over its stdin and stdout by one JSON object a line.
//
// A Host runs one job at a time: Start sets it up and returns the address
// the near side talks to, Go runs a bounded step of it (send n messages),
// Stop tears it down. Jobs are looked up by kind in a Handlers table that
// both sides share.
package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// EnvVar, set to "1" in a process's environment, makes the benchmark
// binary serve jobs on stdin/stdout instead of running its command line.
const EnvVar = "PCOR_BENCH_PEER"

// ErrNoJob is returned by Go and Stop when no job is running, and by Start
// for an unknown job kind.
var ErrNoJob = errors.New("peer: no such job")

// ErrBusy is returned by Start while another job runs.
var ErrBusy = errors.New("peer: a job is already running")

// Job describes the far side of one measurement.
type Job struct {
	Kind    string `json:"kind"`
	Proc    uint32 `json:"proc,omitempty"` // process id for a job that opens its own node
	Addr    string `json:"addr,omitempty"` // the near side's address
	Fabric  string `json:"fabric,omitempty"`
	Mode    string `json:"mode,omitempty"`
	JobKey  uint64 `json:"job_key,omitempty"`
	Size    int    `json:"size,omitempty"`
	Threads int    `json:"threads,omitempty"`
	Window  int    `json:"window,omitempty"`
}

// Running is a started job.
type Running interface {
	// Addr is where the near side reaches the job.
	Addr() string
	// Go runs one bounded step (for example sends n messages) and returns
	// when it is over.
	Go(ctx context.Context, n int) error
	// Stop ends the job and releases everything it holds.
	Stop() error
}

// Counted is a Running job that keeps counters (a pcor node's progress
// counters, for example), read between samples.
type Counted interface {
	Counters() map[string]uint64
}

// Handler starts a job.
type Handler func(ctx context.Context, job Job) (Running, error)

// Handlers maps job kinds to their handlers.
type Handlers map[string]Handler

// Host runs jobs somewhere.
type Host interface {
	Start(ctx context.Context, job Job) (addr string, err error)
	Go(ctx context.Context, n int) error
	Stop(ctx context.Context) error
	// Close stops any job and releases the host (ends the peer process).
	Close() error
}

// Local runs jobs in this process.
type Local struct {
	h   Handlers
	mu  sync.Mutex
	cur Running
}

// NewLocal returns a Host running jobs in goroutines of this process.
func NewLocal(h Handlers) *Local { return &Local{h: h} }

// Start starts a job.
func (l *Local) Start(ctx context.Context, job Job) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		return "", ErrBusy
	}
	f := l.h[job.Kind]
	if f == nil {
		return "", fmt.Errorf("%w: kind %q", ErrNoJob, job.Kind)
	}
	r, err := f(ctx, job)
	if err != nil {
		return "", err
	}
	l.cur = r
	return r.Addr(), nil
}

// Go runs a step of the current job.
func (l *Local) Go(ctx context.Context, n int) error {
	l.mu.Lock()
	r := l.cur
	l.mu.Unlock()
	if r == nil {
		return ErrNoJob
	}
	return r.Go(ctx, n)
}

// Counters are the current job's counters, or nil when it keeps none.
func (l *Local) Counters() map[string]uint64 {
	l.mu.Lock()
	r := l.cur
	l.mu.Unlock()
	if c, ok := r.(Counted); ok {
		return c.Counters()
	}
	return nil
}

// Stop ends the current job.
func (l *Local) Stop(context.Context) error {
	l.mu.Lock()
	r := l.cur
	l.cur = nil
	l.mu.Unlock()
	if r == nil {
		return ErrNoJob
	}
	return r.Stop()
}

// Close stops the current job, if any.
func (l *Local) Close() error {
	err := l.Stop(context.Background())
	if errors.Is(err, ErrNoJob) {
		return nil
	}
	return err
}
