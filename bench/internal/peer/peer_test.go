package peer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// echoJob reports the pid of the process running it, fails Go for
// negative steps and counts the messages of the others.
type echoJob struct {
	job  Job
	sent uint64
}

func (e *echoJob) Counters() map[string]uint64 { return map[string]uint64{"sent": e.sent} }

func (e *echoJob) Addr() string { return fmt.Sprintf("%s/%d/%d", e.job.Addr, e.job.Size, os.Getpid()) }
func (e *echoJob) Go(_ context.Context, n int) error {
	if n < 0 {
		return fmt.Errorf("negative step %d", n)
	}
	e.sent += uint64(n)
	return nil
}
func (e *echoJob) Stop() error { return nil }

var testHandlers = Handlers{
	"echo": func(_ context.Context, j Job) (Running, error) { return &echoJob{job: j}, nil },
	"fail": func(context.Context, Job) (Running, error) { return nil, errors.New("cannot start") },
}

func TestMain(m *testing.M) {
	if IsChild() {
		if err := Serve(context.Background(), os.Stdin, os.Stdout, testHandlers); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func exercise(t *testing.T, h Host, wantOtherPid bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, err := h.Start(ctx, Job{Kind: "echo", Addr: "near", Size: 7})
	if err != nil {
		t.Fatal(err)
	}
	self := fmt.Sprintf("/%d", os.Getpid())
	if !strings.HasPrefix(addr, "near/7/") || strings.HasSuffix(addr, self) == wantOtherPid {
		t.Errorf("addr %q (own pid %d, want other process %v)", addr, os.Getpid(), wantOtherPid)
	}
	if _, err := h.Start(ctx, Job{Kind: "echo"}); err == nil {
		t.Error("second Start while running succeeded")
	}
	if err := h.Go(ctx, 3); err != nil {
		t.Error(err)
	}
	if err := h.Go(ctx, 4); err != nil {
		t.Error(err)
	}
	var c map[string]uint64
	switch h := h.(type) {
	case *Local:
		c = h.Counters()
	case *Process:
		if c, err = h.Counters(ctx); err != nil {
			t.Error(err)
		}
	}
	if c["sent"] != 7 {
		t.Errorf("counters of the job after steps of 3 and 4: %v", c)
	}
	if err := h.Go(ctx, -1); err == nil || !strings.Contains(err.Error(), "negative step") {
		t.Errorf("Go(-1) = %v", err)
	}
	if err := h.Stop(ctx); err != nil {
		t.Error(err)
	}
	if err := h.Stop(ctx); err == nil {
		t.Error("Stop without a job succeeded")
	}
	if _, err := h.Start(ctx, Job{Kind: "nosuch"}); err == nil {
		t.Error("unknown kind started")
	}
	if _, err := h.Start(ctx, Job{Kind: "fail"}); err == nil || !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("failing job: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Error(err)
	}
}

func TestLocal(t *testing.T) {
	l := NewLocal(testHandlers)
	exercise(t, l, false)
	if _, err := l.Start(context.Background(), Job{Kind: "nosuch"}); !errors.Is(err, ErrNoJob) {
		t.Errorf("local unknown kind: %v", err)
	}
}

func TestProcess(t *testing.T) {
	p, err := Spawn("")
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, p, true)
	if _, err := p.Start(context.Background(), Job{Kind: "echo"}); err == nil {
		t.Error("Start after Close succeeded")
	}
}

func TestProcessContextEndsPeer(t *testing.T) {
	p, err := Spawn("")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Start(ctx, Job{Kind: "echo"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Start: %v", err)
	}
}
