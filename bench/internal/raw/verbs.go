package raw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/internal/verbs"
)

// Raw verbs baselines for --fabric rdma: a SEND/RECV ping-pong against an
// echo in the peer process (ib_send_lat) and an RDMA WRITE stream into the
// peer process's memory (ib_write_bw), each between two RC queue pairs of
// the machine's RDMA device exchanged through the peer job protocol.

// verbsDepth is the send queue depth of a ping-pong end.
const verbsDepth = 4

// verbsJob is a running far end: an echo loop, or an idle write target.
type verbsJob struct {
	end    *verbs.BaselineEnd
	cancel context.CancelFunc
	wg     sync.WaitGroup
	err    error
}

func (j *verbsJob) Addr() string                  { return j.end.Info().String() }
func (j *verbsJob) Go(context.Context, int) error { return nil }
func (j *verbsJob) Stop() error {
	j.cancel()
	j.wg.Wait()
	j.end.Close()
	return j.err
}

// startVerbs opens a far end of job.Size bytes and connects it to the
// near end described by job.Addr.
func startVerbs(job peer.Job, depth int) (*verbsJob, error) {
	rem, err := verbs.ParseBaselineInfo(job.Addr)
	if err != nil {
		return nil, err
	}
	end, err := verbs.NewBaselineEnd(verbs.BaselineConfig{}, max(job.Size, 1), depth)
	if err != nil {
		return nil, err
	}
	if err := end.Connect(rem); err != nil {
		end.Close()
		return nil, err
	}
	return &verbsJob{end: end, cancel: func() {}}, nil
}

// VerbsEcho is the peer job "verbs-echo": it answers every SEND of up to
// job.Size bytes from the near end in job.Addr, busy-polling, until
// stopped.
func VerbsEcho(_ context.Context, job peer.Job) (peer.Running, error) {
	j, err := startVerbs(job, verbsDepth)
	if err != nil {
		return nil, fmt.Errorf("verbs-echo: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	j.cancel = cancel
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		j.err = j.end.Echo(ctx)
	}()
	return j, nil
}

// VerbsSink is the peer job "verbs-sink": a connected end whose job.Size
// bytes of memory the near end writes into. It does nothing itself.
func VerbsSink(_ context.Context, job peer.Job) (peer.Running, error) {
	j, err := startVerbs(job, 1)
	if err != nil {
		return nil, fmt.Errorf("verbs-sink: %w", err)
	}
	return j, nil
}

// connectVerbs opens a near end and a far job of kind on host, and
// connects the two.
func connectVerbs(ctx context.Context, host peer.Host, kind string, size, depth int) (*verbs.BaselineEnd, error) {
	end, err := verbs.NewBaselineEnd(verbs.BaselineConfig{}, max(size, 1), depth)
	if err != nil {
		return nil, err
	}
	addr, err := host.Start(ctx, peer.Job{Kind: kind, Addr: end.Info().String(), Size: max(size, 1)})
	if err != nil {
		end.Close()
		return nil, err
	}
	rem, err := verbs.ParseBaselineInfo(addr)
	if err == nil {
		err = end.Connect(rem)
	}
	if err != nil {
		host.Stop(ctx)
		end.Close()
		return nil, err
	}
	return end, nil
}

// VerbsPingPong times iters round trips of size-byte SENDs against a
// verbs-echo job it starts on host (and stops), after warmup untimed
// ones, and returns each round trip in microseconds.
func VerbsPingPong(ctx context.Context, host peer.Host, size, warmup, iters int) ([]float64, error) {
	end, err := connectVerbs(ctx, host, "verbs-echo", size, verbsDepth)
	if err != nil {
		return nil, err
	}
	rtts, err := end.PingPong(ctx, size, warmup, iters)
	serr := host.Stop(context.Background())
	end.Close()
	if err != nil {
		return nil, fmt.Errorf("verbs ping-pong %d B: %w", size, err)
	}
	if serr != nil {
		return nil, fmt.Errorf("verbs echo: %w", serr)
	}
	out := make([]float64, len(rtts))
	for i, d := range rtts {
		out[i] = float64(d.Nanoseconds()) / 1e3
	}
	return out, nil
}

// VerbsStream is an RDMA WRITE stream into a verbs-sink job.
type VerbsStream struct {
	host  peer.Host
	end   *verbs.BaselineEnd
	depth int
}

// OpenVerbsStream starts a verbs-sink of maxSize bytes on host and
// connects a near end with up to depth writes outstanding.
func OpenVerbsStream(ctx context.Context, host peer.Host, maxSize, depth int) (*VerbsStream, error) {
	end, err := connectVerbs(ctx, host, "verbs-sink", maxSize, depth)
	if err != nil {
		return nil, err
	}
	return &VerbsStream{host: host, end: end, depth: depth}, nil
}

// Sample streams size-byte writes for about dur.
func (s *VerbsStream) Sample(ctx context.Context, size int, dur time.Duration) (Sample, error) {
	r, err := s.end.WriteStream(ctx, size, s.depth, dur)
	if err != nil {
		return Sample{}, fmt.Errorf("verbs write stream %d B: %w", size, err)
	}
	if r.Iters == 0 {
		return Sample{}, errors.New("verbs write stream: nothing completed")
	}
	return Sample{Bytes: int64(r.Size) * int64(r.Iters), Messages: int64(r.Iters), Elapsed: r.Elapsed}, nil
}

// Close stops the sink and releases the near end.
func (s *VerbsStream) Close() error {
	err := s.host.Stop(context.Background())
	s.end.Close()
	return err
}
