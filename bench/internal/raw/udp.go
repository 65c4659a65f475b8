package raw

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/udp"
)

// Datagram kinds of the stream baseline (the first payload byte).
const (
	kindData   = 0
	kindMarker = 1
	kindAck    = 2
)

// OpenUDP opens an unbatched UDP port on loopback (batch size 1, no GSO or
// GRO: one datagram per system call).
func OpenUDP() (*udp.Port, error) {
	return udp.Listen("127.0.0.1:0", udp.Config{BatchSize: 1, DisableGSO: true, DisableGRO: true})
}

// sendMessage sends buf[:size] as datagrams of at most max bytes, one per
// system call.
func sendMessage(p *udp.Port, to fabric.Endpoint, buf []byte, size, max int) error {
	dg := make([]fabric.Datagram, 1)
	for off := 0; off < size; off += max {
		end := min(off+max, size)
		dg[0] = fabric.Datagram{Body: buf[off:end], To: to}
		if _, err := p.Send(dg); err != nil {
			return err
		}
	}
	return nil
}

// PingPong times iters round trips of size-byte messages against an echo
// (UDPEcho) at to, after warmup untimed ones, and returns each round trip
// in microseconds. A message larger than a datagram goes as several.
func PingPong(ctx context.Context, p *udp.Port, to fabric.Endpoint, size, warmup, iters int) ([]float64, error) {
	max := p.MaxDatagram(to)
	buf := make([]byte, size)
	msgs := make([][]byte, 1)
	if dl, ok := ctx.Deadline(); ok {
		p.SetReceiveDeadline(dl)
		defer p.SetReceiveDeadline(time.Time{})
	}
	out := make([]float64, 0, iters)
	for i := 0; i < warmup+iters; i++ {
		t0 := time.Now()
		if err := sendMessage(p, to, buf, size, max); err != nil {
			return nil, err
		}
		for got := 0; got < size; {
			n, err := p.Receive(msgs)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, fmt.Errorf("udp ping-pong %d B: %w", size, ErrLost)
			}
			if err != nil {
				return nil, err
			}
			if n == 1 {
				got += len(msgs[0])
			}
		}
		if i >= warmup {
			out = append(out, float64(time.Since(t0).Nanoseconds())/1e3)
		}
	}
	return out, nil
}

// Stream sends size-byte messages, one datagram per system call, to a sink
// (UDPSink) at to for dur, then an end marker, and returns what the sink
// counted: bytes received between the first and the last data datagram,
// and the messages they make. Messages larger than a datagram go as
// several.
func Stream(ctx context.Context, p *udp.Port, to fabric.Endpoint, size int, dur time.Duration, seq uint64) (Sample, error) {
	max := p.MaxDatagram(to)
	buf := make([]byte, max)
	buf[0] = kindData
	dg := []fabric.Datagram{{To: to}}
	start := time.Now()
	for i := 0; ; i++ {
		if i%16 == 0 && (time.Since(start) >= dur || ctx.Err() != nil) {
			break
		}
		for off := 0; off < size; off += max {
			dg[0].Body = buf[:min(max, size-off)]
			if _, err := p.Send(dg); err != nil {
				return Sample{}, err
			}
		}
	}
	s, err := finish(ctx, p, to, seq)
	if size > 0 && s.Bytes > 0 {
		// The sink counts datagrams: the CPU and system calls of an
		// operation are those of a message, as for the other series.
		s.Messages = s.Bytes / int64(size)
		if s.Messages == 0 {
			s.Messages = 1
		}
	}
	return s, err
}

// finish sends the end marker until the sink acknowledges it.
func finish(ctx context.Context, p *udp.Port, to fabric.Endpoint, seq uint64) (Sample, error) {
	marker := make([]byte, 9)
	marker[0] = kindMarker
	binary.LittleEndian.PutUint64(marker[1:], seq)
	msgs := make([][]byte, 1)
	defer p.SetReceiveDeadline(time.Time{})
	for try := 0; try < 100 && ctx.Err() == nil; try++ {
		if _, err := p.Send([]fabric.Datagram{{Body: marker, To: to}}); err != nil {
			return Sample{}, err
		}
		p.SetReceiveDeadline(time.Now().Add(20 * time.Millisecond))
		for {
			n, err := p.Receive(msgs)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				return Sample{}, err
			}
			if n == 1 && len(msgs[0]) == 33 && msgs[0][0] == kindAck &&
				binary.LittleEndian.Uint64(msgs[0][1:]) == seq {
				a := msgs[0]
				return Sample{
					Bytes:    int64(binary.LittleEndian.Uint64(a[9:])),
					Messages: int64(binary.LittleEndian.Uint64(a[17:])),
					Elapsed:  time.Duration(binary.LittleEndian.Uint64(a[25:])),
				}, nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	return Sample{}, fmt.Errorf("udp stream end marker: %w", ErrLost)
}

// udpJob is a running UDP echo or sink.
type udpJob struct {
	p   *udp.Port
	wg  sync.WaitGroup
	err error
}

func (j *udpJob) Addr() string                        { return j.p.LocalEndpoint().String() }
func (j *udpJob) Go(ctx context.Context, n int) error { return nil }
func (j *udpJob) Stop() error {
	j.p.Close()
	j.wg.Wait()
	if errors.Is(j.err, fabric.ErrClosed) {
		return nil
	}
	return j.err
}

func startUDP(job peer.Job, loop func(p *udp.Port, to fabric.Endpoint) error) (peer.Running, error) {
	p, err := OpenUDP()
	if err != nil {
		return nil, err
	}
	to, err := p.ParseEndpoint(job.Addr)
	if err != nil {
		p.Close()
		return nil, err
	}
	j := &udpJob{p: p}
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		j.err = loop(p, to)
	}()
	return j, nil
}

// UDPEcho is the peer job "udp-echo": it returns every job.Size bytes it
// receives to job.Addr, one datagram per system call.
func UDPEcho(_ context.Context, job peer.Job) (peer.Running, error) {
	if job.Size < 1 {
		return nil, fmt.Errorf("udp-echo: size %d", job.Size)
	}
	return startUDP(job, func(p *udp.Port, to fabric.Endpoint) error {
		max := p.MaxDatagram(to)
		buf := make([]byte, job.Size)
		msgs := make([][]byte, 1)
		got := 0
		for {
			n, err := p.Receive(msgs)
			if err != nil {
				return err
			}
			if n == 0 {
				continue
			}
			got += len(msgs[0])
			for got >= job.Size {
				got -= job.Size
				if err := sendMessage(p, to, buf, job.Size, max); err != nil {
					return err
				}
			}
		}
	})
}

// UDPSink is the peer job "udp-sink": it counts data datagrams and answers
// each end marker with what it counted since the previous one.
func UDPSink(_ context.Context, job peer.Job) (peer.Running, error) {
	return startUDP(job, func(p *udp.Port, to fabric.Endpoint) error {
		msgs := make([][]byte, 1)
		var bytes, dgs int64
		var first, last time.Time
		ack := make([]byte, 33)
		lastSeq := ^uint64(0)
		for {
			n, err := p.Receive(msgs)
			if err != nil {
				return err
			}
			if n == 0 || len(msgs[0]) == 0 {
				continue
			}
			m := msgs[0]
			if m[0] != kindMarker || len(m) != 9 {
				if dgs == 0 {
					first = time.Now()
				}
				last = time.Now()
				bytes += int64(len(m))
				dgs++
				continue
			}
			seq := binary.LittleEndian.Uint64(m[1:])
			if seq != lastSeq {
				// A first datagram opens the interval, so it is not counted.
				var el time.Duration
				if dgs > 1 {
					el = last.Sub(first)
					bytes -= bytes / dgs
					dgs--
				}
				ack[0] = kindAck
				binary.LittleEndian.PutUint64(ack[1:], seq)
				binary.LittleEndian.PutUint64(ack[9:], uint64(bytes))
				binary.LittleEndian.PutUint64(ack[17:], uint64(dgs))
				binary.LittleEndian.PutUint64(ack[25:], uint64(el))
				lastSeq = seq
				bytes, dgs = 0, 0
			}
			if _, err := p.Send([]fabric.Datagram{{Body: ack, To: to}}); err != nil {
				return err
			}
		}
	})
}
