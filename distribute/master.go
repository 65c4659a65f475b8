package distribute

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// Tags of the master/worker protocol. A work message is a header (Lo, Hi
// as little-endian uint64) followed by the input; Lo == Hi tells the
// worker to stop. A result is the same header followed by the output.
const (
	TagWork   pcor.Tag = 0x5744 // "WD"
	TagResult pcor.Tag = 0x5752 // "WR"
)

const headerLen = 16

// ErrIncomplete is returned by Run when workers were given up and no
// worker was left to do their work.
var ErrIncomplete = errors.New("distribute: work left undone")

// Plan describes the work and how to split it.
type Plan struct {
	Strategy Strategy
	Total    int       // units of work
	VRP      []float64 // relative performance per worker (Static, VRPSS); nil: all equal
	Chunk    int       // SS: units per range (default 1)
	Phases   int       // VRPSS: phases the work is handed out in (default 4)
	// Adapt makes VRPSS revise the VRP as it goes, from each worker's
	// measured rate (units per second of round trip): the methodology's
	// monitoring step, for machines whose speed differs from the models'.
	Adapt bool

	// Input returns the input of range r sent to the worker (nil: none).
	Input func(r Range) []byte
	// Collect takes the result of range r from worker w. It is called
	// once per range, from the worker's goroutine; an error stops the run.
	Collect func(w int, r Range, result []byte) error
	// Deadline, if set, bounds how long worker w may take for range r
	// (the round trip) before it is given up.
	Deadline func(w int, r Range) time.Duration
}

// WorkerReport is what one worker did in a run.
type WorkerReport struct {
	Addr   pcor.Addr
	Units  int
	Chunks int
	Busy   time.Duration // sum of round trips (send, compute, result)
	Lost   error         // why the worker was given up (nil: it was not)
}

// Report is the outcome of a run.
type Report struct {
	Strategy Strategy
	Elapsed  time.Duration
	Workers  []WorkerReport
}

// Run hands out plan.Total units to the workers (each a thread running
// Serve) and returns when all are collected, the context ends or Collect
// fails. Workers that fail are given up and their work redone by others;
// ErrIncomplete is returned when none is left. The workers are told to
// stop at the end.
func Run(ctx context.Context, node *pcor.Node, workers []pcor.Addr, plan Plan) (*Report, error) {
	if len(workers) == 0 {
		return nil, errors.New("distribute: no workers")
	}
	if plan.Total < 0 {
		return nil, fmt.Errorf("distribute: negative total %d", plan.Total)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pl := newPool(&plan, len(workers))
	stopOnDone := context.AfterFunc(ctx, pl.stop)
	defer stopOnDone()

	rep := &Report{Strategy: plan.Strategy, Workers: make([]WorkerReport, len(workers))}
	start := time.Now()
	var wg sync.WaitGroup
	for i, addr := range workers {
		rep.Workers[i].Addr = addr
		th := node.NewThread()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := drive(ctx, th, i, addr, pl, &plan, &rep.Workers[i]); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return rep, err
	}
	if done, total := pl.finished(); done != total {
		var lost []error
		for _, w := range rep.Workers {
			if w.Lost != nil {
				lost = append(lost, w.Lost)
			}
		}
		return rep, fmt.Errorf("%w: %d of %d units (%w)", ErrIncomplete, total-done, total, errors.Join(lost...))
	}
	return rep, nil
}

// drive serves one worker until the work runs out or the worker fails. It
// returns an error only for failures that stop the run (Collect's).
func drive(ctx context.Context, th *pcor.Thread, i int, addr pcor.Addr, pl *pool, plan *Plan, rep *WorkerReport) error {
	msg := make([]byte, headerLen)
	for {
		r, ok := pl.take(i)
		if !ok {
			break
		}
		t0 := time.Now()
		out, err := roundTrip(ctx, th, addr, r, plan, i, msg[:0])
		if err != nil {
			pl.fail(i, r)
			if ctx.Err() == nil {
				rep.Lost = fmt.Errorf("worker %d (%v): %w", i, addr, err)
			}
			break // a worker given up for being late is still told to stop
		}
		took := time.Since(t0)
		rep.Busy += took
		if plan.Collect != nil {
			if err := plan.Collect(i, r, out); err != nil {
				pl.fail(i, r)
				return err
			}
		}
		pl.complete(i, r, took)
		rep.Units += r.Len()
		rep.Chunks++
	}
	// Tell the worker to stop; a worker already gone does not matter.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	th.Send(sctx, addr, TagWork, header(msg[:0], Range{}))
	return nil
}

func header(b []byte, r Range) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(r.Lo))
	return binary.LittleEndian.AppendUint64(b, uint64(r.Hi))
}

func parseHeader(b []byte) (Range, bool) {
	if len(b) < headerLen {
		return Range{}, false
	}
	lo, hi := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	if lo > hi || hi > 1<<53 {
		return Range{}, false
	}
	return Range{int(lo), int(hi)}, true
}

// roundTrip sends range r to the worker and waits for its result.
func roundTrip(ctx context.Context, th *pcor.Thread, addr pcor.Addr, r Range, plan *Plan, i int, buf []byte) ([]byte, error) {
	msg := header(buf, r)
	if plan.Input != nil {
		msg = append(msg, plan.Input(r)...)
	}
	if plan.Deadline != nil {
		if d := plan.Deadline(i, r); d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	if err := th.Send(ctx, addr, TagWork, msg); err != nil {
		return nil, err
	}
	m, err := th.Recv(ctx, addr, TagResult)
	if err != nil {
		return nil, err
	}
	got, ok := parseHeader(m.Data)
	if !ok || got != r {
		return nil, fmt.Errorf("distribute: result for %v, sent %v", got, r)
	}
	return m.Data[headerLen:], nil
}
