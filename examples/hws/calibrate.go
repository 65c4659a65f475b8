package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/athread"
	"github.com/pcor-go/pcor/pcor"
)

// calibThread is the pcor thread of the calibration's messages.
const calibThread pcor.ThreadID = 0x7fff4858

// calibration is what a calibration run measured: the round trip of a
// message between process 0 and process 1 (a member of its group) with
// athread running and the other processes busy, as during a run, and the
// time the job's work takes on one processor.
type calibration struct {
	RoundTrip time.Duration `json:"rtt_ns"`
	Work      time.Duration `json:"work_ns"`
}

// perTask is what moving one block costs its group: the steal's round
// trip, and the result's way back with the wake-up of the thread joining
// it, counted as a second round trip.
func (c calibration) perTask() time.Duration { return 2 * c.RoundTrip }

// calibRoundTrips is the number of round trips measured (the median is
// kept).
const calibRoundTrips = 40

// sequential runs the job's work on one processor, without threads, and
// returns a value of its result (kept in calibSink, so the work is done).
var sequential = map[string]func(size, cutoff int) int64{
	"fib": func(n, _ int) int64 { return fibSeq(int64(n)) },
	"nqueens": func(n, _ int) int64 {
		return queensSeq(uint32(1)<<n-1, 0, 0, 0)
	},
	"nqueens-flat": func(n, _ int) int64 { return queensSeq(uint32(1)<<n-1, 0, 0, 0) },
	"matmul": func(n, _ int) int64 {
		return int64(multiply(testMatrix(n, 1), testMatrix(n, 2), n)[0])
	},
}

// calibSink holds the results of the calibration's busy and timed work.
var calibSink atomic.Int64

// calibrate runs on every process of a calibration run: process 0 times
// round trips to process 1 while the others compute, then tells them all
// to stop, times the job's work, and prints the calibration after
// "CALIBRATE ".
func calibrate(ctx context.Context, rt *athread.Runtime, node *pcor.Node, appName string, size, cutoff int, stdout io.Writer) error {
	seq, ok := sequential[appName]
	if !ok {
		return fmt.Errorf("no sequential version of %q", appName)
	}
	n := len(node.Directory().Members())
	t := node.Thread(calibThread)
	const tagPing, tagStop = 1, 2
	if rt.Proc() != 0 {
		var stop atomic.Bool
		if rt.Proc() >= 2 {
			go func() { // busy, as the processes of a run are
				for !stop.Load() {
					calibSink.Add(fibSeq(20))
				}
			}()
		}
		defer stop.Store(true)
		for {
			m, err := t.Recv(ctx, pcor.Addr{Proc: 0, Thread: calibThread}, pcor.AnyTag)
			if err != nil {
				return err
			}
			if m.Tag == tagStop {
				return nil
			}
			if err := t.Send(ctx, pcor.Addr{Proc: 0, Thread: calibThread}, tagPing, m.Data); err != nil {
				return err
			}
		}
	}
	if n < 2 {
		return fmt.Errorf("calibration needs 2 processes or more")
	}
	peer := pcor.Addr{Proc: 1, Thread: calibThread}
	var rtts []time.Duration
	time.Sleep(20 * time.Millisecond) // the others start computing
	for range calibRoundTrips {
		start := time.Now()
		if err := t.Send(ctx, peer, tagPing, []byte("ping")); err != nil {
			return err
		}
		if _, err := t.Recv(ctx, peer, tagPing); err != nil {
			return err
		}
		rtts = append(rtts, time.Since(start))
	}
	for p := 1; p < n; p++ {
		if err := t.Send(ctx, pcor.Addr{Proc: pcor.ProcID(p), Thread: calibThread}, tagStop, nil); err != nil {
			return err
		}
	}
	slices.Sort(rtts)
	c := calibration{RoundTrip: rtts[len(rtts)/2], Work: quickest(func() { calibSink.Add(seq(size, cutoff)) })}
	b, _ := json.Marshal(c)
	fmt.Fprintf(stdout, "CALIBRATE %s\n", b)
	return nil
}

// parseCalibration finds the CALIBRATE line in a calibration run's output.
func parseCalibration(out string) (calibration, error) {
	for _, l := range strings.Split(out, "\n") {
		i := strings.Index(l, "CALIBRATE ")
		if i < 0 {
			continue
		}
		var c calibration
		err := json.Unmarshal([]byte(l[i+len("CALIBRATE "):]), &c)
		return c, err
	}
	return calibration{}, fmt.Errorf("no CALIBRATE line in:\n%s", out)
}
