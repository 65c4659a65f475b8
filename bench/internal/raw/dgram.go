package raw

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/fabric"
)

// Round-trip baselines over plain UDP sockets, one datagram per system
// call, both ends alike:
//
//   - "udpconn": a net.UDPConn, the way a Go program usually talks UDP
//     (reads wait in the runtime's network poller);
//   - "sys": a blocking socket driven by x/sys/unix read and write on a
//     locked OS thread (the thread sleeps in the kernel, no poller);
//   - "sys-poll": a non-blocking socket read in a busy loop on a locked OS
//     thread (yielding now and then, so that two pollers sharing a CPU do
//     not hand over only at scheduler ticks).

// Kinds of datagram socket baselines.
const (
	KindConn    = "udpconn"
	KindSys     = "sys"
	KindSysPoll = "sys-poll"
)

// maxChunk is the largest datagram the baselines send on loopback.
const maxChunk = fabric.MaxDatagramSize

// Dgram is one end of a round-trip baseline.
type Dgram interface {
	// connect fixes the far end.
	connect(addr string) error
	addr() string
	write(b []byte) error
	// read waits for one datagram (until the socket's deadline).
	read(b []byte) (int, error)
	close() error
	// thread is true when the end must run on a locked OS thread.
	thread() bool
}

// OpenDgram opens one end of a round-trip baseline of the given kind on
// loopback.
func OpenDgram(kind string) (Dgram, error) {
	switch kind {
	case KindConn:
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, err
		}
		c.SetReadBuffer(8 << 20)
		c.SetWriteBuffer(8 << 20)
		return &connSock{c: c}, nil
	case KindSys, KindSysPoll:
		return openSys(kind == KindSysPoll)
	}
	return nil, fmt.Errorf("raw: unknown datagram baseline %q", kind)
}

type connSock struct {
	c  *net.UDPConn
	to netip.AddrPort
}

func (s *connSock) connect(a string) (err error) { s.to, err = netip.ParseAddrPort(a); return err }
func (s *connSock) addr() string                 { return s.c.LocalAddr().String() }
func (s *connSock) thread() bool                 { return false }
func (s *connSock) close() error                 { return s.c.Close() }
func (s *connSock) write(b []byte) error {
	_, err := s.c.WriteToUDPAddrPort(b, s.to)
	return err
}
func (s *connSock) read(b []byte) (int, error) {
	s.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, _, err := s.c.ReadFromUDPAddrPort(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, ErrLost
	}
	return n, err
}

type sysSock struct {
	fd    int
	poll  bool
	local string
	mu    sync.Mutex
	shut  bool
}

func openSys(poll bool) (*sysSock, error) {
	typ := unix.SOCK_DGRAM | unix.SOCK_CLOEXEC
	if poll {
		typ |= unix.SOCK_NONBLOCK
	}
	fd, err := unix.Socket(unix.AF_INET, typ, 0)
	if err != nil {
		return nil, fmt.Errorf("raw: socket: %w", err)
	}
	s := &sysSock{fd: fd, poll: poll}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8<<20)
	// A lost datagram ends a blocking read after two seconds.
	tv := unix.NsecToTimeval(int64(2 * time.Second))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("raw: bind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	s.local = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port)).String()
	return s, nil
}

func (s *sysSock) addr() string { return s.local }
func (s *sysSock) thread() bool { return true }

func (s *sysSock) connect(a string) error {
	ap, err := netip.ParseAddrPort(a)
	if err != nil {
		return err
	}
	return unix.Connect(s.fd, &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())})
}

func (s *sysSock) write(b []byte) error {
	for {
		_, err := unix.Write(s.fd, b)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return err
	}
}

func (s *sysSock) read(b []byte) (int, error) {
	var deadline time.Time
	for spins := 0; ; spins++ {
		n, err := unix.Read(s.fd, b)
		switch {
		case err == nil && n == 0 && s.isShut():
			return 0, net.ErrClosed
		case err == nil:
			return n, nil
		case err == unix.EINTR:
		case err == unix.EAGAIN && s.poll:
			if spins%256 == 255 {
				if s.isShut() {
					return 0, net.ErrClosed
				}
				if deadline.IsZero() {
					deadline = time.Now().Add(2 * time.Second)
				} else if time.Now().After(deadline) {
					return 0, ErrLost
				}
				runtime.Gosched()
			}
		case err == unix.EAGAIN:
			return 0, ErrLost // SO_RCVTIMEO
		default:
			return 0, err
		}
	}
}

func (s *sysSock) isShut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shut
}

// shutdown wakes a blocked read, which then reports the socket closed.
func (s *sysSock) shutdown() {
	s.mu.Lock()
	s.shut = true
	s.mu.Unlock()
	unix.Shutdown(s.fd, unix.SHUT_RDWR)
}

func (s *sysSock) close() error { return unix.Close(s.fd) }

// DgramAddr is the local address of d, for the far end.
func DgramAddr(d Dgram) string { return d.addr() }

// CloseDgram closes d.
func CloseDgram(d Dgram) error { return d.close() }

// sendChunks sends b as datagrams of at most maxChunk bytes.
func sendChunks(s Dgram, b []byte) error {
	for off := 0; off < len(b); off += maxChunk {
		if err := s.write(b[off:min(off+maxChunk, len(b))]); err != nil {
			return err
		}
	}
	return nil
}

// recvBytes reads datagrams until size bytes have arrived.
func recvBytes(s Dgram, buf []byte, size int) error {
	for got := 0; got < size; {
		n, err := s.read(buf)
		if err != nil {
			return err
		}
		got += n
	}
	return nil
}

// DgramPingPong times iters round trips of size bytes between s and an
// echo of the same kind at addr, after warmup untimed ones, in
// microseconds each. s is closed on return.
func DgramPingPong(ctx context.Context, s Dgram, addr string, size, warmup, iters int) ([]float64, error) {
	defer s.close()
	if err := s.connect(addr); err != nil {
		return nil, err
	}
	if s.thread() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	out := make([]float64, 0, iters)
	buf := make([]byte, size)
	rbuf := make([]byte, maxChunk)
	for i := 0; i < warmup+iters; i++ {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		t0 := time.Now()
		if err := sendChunks(s, buf); err != nil {
			return nil, err
		}
		if err := recvBytes(s, rbuf, size); err != nil {
			return nil, fmt.Errorf("%d B ping-pong: %w", size, err)
		}
		if i >= warmup {
			out = append(out, float64(time.Since(t0).Nanoseconds())/1e3)
		}
	}
	return out, nil
}

// dgEcho is a running echo job.
type dgEcho struct {
	s    Dgram
	done chan error
}

func (j *dgEcho) Addr() string                  { return j.s.addr() }
func (j *dgEcho) Go(context.Context, int) error { return nil }
func (j *dgEcho) Stop() error {
	if ss, ok := j.s.(*sysSock); ok {
		ss.shutdown()
	} else {
		j.s.close()
	}
	err := <-j.done
	if ss, ok := j.s.(*sysSock); ok {
		ss.close()
	}
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// DgramEcho returns the peer job handler of an echo of the given kind: it
// sends back every job.Size bytes it receives from job.Addr.
func DgramEcho(kind string) peer.Handler {
	return func(_ context.Context, job peer.Job) (peer.Running, error) {
		if job.Size < 1 {
			return nil, fmt.Errorf("%s echo: size %d", kind, job.Size)
		}
		s, err := OpenDgram(kind)
		if err != nil {
			return nil, err
		}
		if err := s.connect(job.Addr); err != nil {
			s.close()
			return nil, err
		}
		j := &dgEcho{s: s, done: make(chan error, 1)}
		go func() {
			if s.thread() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			buf := make([]byte, job.Size)
			rbuf := make([]byte, maxChunk)
			for {
				err := recvBytes(s, rbuf, job.Size)
				if errors.Is(err, ErrLost) {
					continue // idle between samples
				}
				if err == nil {
					err = sendChunks(s, buf)
				}
				if err != nil {
					j.done <- err
					return
				}
			}
		}()
		return j, nil
	}
}
