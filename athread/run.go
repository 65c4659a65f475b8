package athread

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/pcor"
)

// FromEnv starts a runtime for a process started by pcorrun (or any
// launcher pcor.FromEnv understands): it joins the job, waits until all
// PCOR_SIZE processes have joined, and checks the registrations. Without
// those variables (a program run alone) it returns a single-process
// runtime. cfg.Node and cfg.Procs are set by FromEnv; closing the runtime
// closes the node it made.
func FromEnv(ctx context.Context, cfg Config) (*Runtime, error) {
	if os.Getenv(directory.EnvCoord) == "" && os.Getenv(directory.EnvSize) == "" {
		return New(ctx, cfg)
	}
	size, err := strconv.Atoi(os.Getenv(directory.EnvSize))
	if err != nil || size < 1 {
		return nil, fmt.Errorf("athread: %s must give the number of processes", directory.EnvSize)
	}
	node, err := pcor.FromEnv(ctx, pcor.JoinConfig{})
	if err != nil {
		return nil, err
	}
	if err := node.Directory().Wait(ctx, size); err != nil {
		node.Close()
		return nil, err
	}
	cfg.Node = node
	cfg.Procs = nil
	for p := 0; p < size; p++ {
		cfg.Procs = append(cfg.Procs, pcor.ProcID(p))
	}
	rt, err := New(ctx, cfg)
	if err != nil {
		node.Close()
		return nil, err
	}
	rt.ownNode = true
	return rt, nil
}

// Run runs main in process 0 and serves the other processes until process
// 0 has finished: in process 0 it runs main as a thread of its own on a VP
// (so that its joins run other threads rather than wait), then tells the other
// processes the run is over and collects their traces; in the others it
// returns when process 0 says so, is gone, or ctx ends. In a
// single-process runtime it just calls main.
func (rt *Runtime) Run(ctx context.Context, main func(ctx context.Context) error) error {
	if rt.cl == nil || rt.proc == 0 {
		ctx := WithRuntime(ctx, rt)
		_, err := goLabel(ctx, "run", func(ctx context.Context) (struct{}, error) { return struct{}{}, main(ctx) }).Join(ctx)
		if rt.cl != nil {
			rt.cl.endRun(ctx)
		}
		return err
	}
	select {
	case <-rt.cl.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endRun tells every other live process the run is over and waits (a
// bounded time) for their traces.
func (c *cluster) endRun(ctx context.Context) {
	t := c.node.Thread(c.svc)
	var told []pcor.ProcID
	for _, p := range c.live() {
		if p == c.rt.proc {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if t.Send(sctx, pcor.Addr{Proc: p, Thread: c.svc}, tagDone, nil) == nil {
			told = append(told, p)
		}
		cancel()
	}
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for got := map[pcor.ProcID]bool{}; len(got) < len(told); {
		select {
		case p := <-c.traceWait:
			got[p] = true
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
