package raw

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/pcor-go/pcor/bench/internal/peer"
)

// TCPStream connects to a sink (TCPSink) at addr and writes size-byte
// messages, one Write each, for dur; then it half-closes and waits for the
// byte count the sink read. The time runs from the connection to the
// count's arrival.
func TCPStream(ctx context.Context, addr string, size int, dur time.Duration) (Sample, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Sample{}, fmt.Errorf("tcp stream: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	buf := make([]byte, size)
	start := time.Now()
	var sent int64
	for i := 0; ; i++ {
		if i%8 == 0 && time.Since(start) >= dur {
			break
		}
		if _, err := c.Write(buf); err != nil {
			return Sample{}, fmt.Errorf("tcp stream: %w", err)
		}
		sent++
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return Sample{}, fmt.Errorf("tcp stream: %w", err)
	}
	var cnt [8]byte
	if _, err := io.ReadFull(c, cnt[:]); err != nil {
		return Sample{}, fmt.Errorf("tcp stream: reading count: %w", err)
	}
	got := int64(binary.LittleEndian.Uint64(cnt[:]))
	if got != sent*int64(size) {
		return Sample{}, fmt.Errorf("tcp stream: sink read %d bytes of %d", got, sent*int64(size))
	}
	return Sample{Bytes: got, Messages: sent, Elapsed: time.Since(start)}, nil
}

type tcpSink struct {
	ln net.Listener
	wg sync.WaitGroup
}

// TCPSink is the peer job "tcp-sink": for each connection it reads until
// end of stream and answers with the number of bytes read.
func TCPSink(_ context.Context, job peer.Job) (peer.Running, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &tcpSink{ln: ln}
	s.wg.Add(1)
	go s.accept(max(job.Size, 4096))
	return s, nil
}

func (s *tcpSink) accept(bufSize int) {
	defer s.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Minute))
			buf := make([]byte, min(bufSize, 4<<20))
			var n int64
			for {
				k, err := c.Read(buf)
				n += int64(k)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return
				}
			}
			var cnt [8]byte
			binary.LittleEndian.PutUint64(cnt[:], uint64(n))
			c.Write(cnt[:])
		}()
	}
}

func (s *tcpSink) Addr() string                        { return s.ln.Addr().String() }
func (s *tcpSink) Go(ctx context.Context, n int) error { return nil }
func (s *tcpSink) Stop() error {
	err := s.ln.Close()
	s.wg.Wait()
	return err
}
