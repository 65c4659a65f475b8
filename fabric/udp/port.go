//go:build linux

package udp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-reuseport"
	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric"
)

// Kind is the fabric name of UDP ports.
const Kind = "udp"

// Port is a fabric.Port on one UDP socket. Any number of goroutines may
// call Send concurrently; one goroutine at a time calls Receive, Poll or
// Wait.
type Port struct {
	id     uint64 // distinguishes ports in Endpoint MTU caches
	cfg    Config
	fd     int
	fdMu   sync.RWMutex // read-held while fd is in use; Close write-holds it to close fd
	family int          // AF_INET or AF_INET6
	local  *Endpoint
	wake   *Endpoint       // where Interrupt sends its datagram (this socket)
	token  [tokenSize]byte // what Interrupt sends: random, drawn at Listen

	wdeadline atomic.Int64 // send deadline, unix nanoseconds (0: none)

	gso    atomic.Bool // GSO in use for sends
	gro    bool        // UDP_GRO enabled on the socket
	ovfl   bool        // SO_RXQ_OVFL enabled on the socket
	rcvBuf int         // socket buffer sizes the kernel granted
	sndBuf int

	sendPool sync.Pool // *sender
	recvMu   sync.Mutex
	rx       *receiver
	// placeMu guards the expectations (rx.exp, see Expect) and is held
	// across a receive that uses them, so that Expect's withdrawal waits
	// for the receive writing into the memory named.
	placeMu   sync.Mutex
	expecting atomic.Bool // rx.exp is not empty
	leading   atomic.Bool // rx.lead is set
	pl        *poller

	probe *mtuProber

	// Sockets connected to destinations (connect.go), by address; noConn
	// is cached in the endpoints that get none.
	connMu sync.Mutex
	conns  map[netip.AddrPort]*connSock
	noConn *connSock
	netns  uint64 // network namespace of fd (SO_NETNS_COOKIE), 0: unknown

	closeOnce sync.Once
	closed    atomic.Bool

	st stats
}

var (
	_ fabric.Port   = (*Port)(nil)
	_ fabric.Waiter = (*Port)(nil)
	_ fabric.Placer = (*Port)(nil)
)

var portIDs atomic.Uint64

// Listen opens a UDP port bound to addr ("ip:port"; port 0 picks a free
// one; ":port" binds every address, IPv4 and IPv6). A port given by number
// is bound with SO_REUSEADDR and SO_REUSEPORT set (see Binding in the
// package documentation). The socket is bound through package net and then taken
// out of Go's network poller: the port waits in its own system calls (see
// Wait), so that a datagram wakes the thread that waits for it and no other.
func Listen(addr string, cfg Config) (*Port, error) {
	cfg = cfg.withDefaults()
	if cfg.BatchSize < 1 || cfg.BatchSize > MaxBatchSize {
		return nil, fmt.Errorf("udp: batch size %d out of range 1..%d", cfg.BatchSize, MaxBatchSize)
	}
	if cfg.RecvBuffer < 0 || cfg.SendBuffer < 0 {
		return nil, errors.New("udp: negative socket buffer size")
	}
	if cfg.MTU != 0 && (cfg.MTU < 576 || cfg.MTU > 65536) {
		return nil, fmt.Errorf("udp: MTU %d out of range 576..65536", cfg.MTU)
	}
	fd, err := bind(addr)
	if err != nil {
		return nil, err
	}
	p := &Port{id: portIDs.Add(1), cfg: cfg, fd: fd}
	if err := p.setup(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return p, nil
}

// bind opens a UDP socket bound to addr, taken out of the network poller.
// Only a port given by number is shared with SO_REUSEPORT: with port 0 the
// kernel may hand out a port that another SO_REUSEPORT socket of the same
// user already holds, and the datagrams meant for one process would then
// be spread over both.
func bind(addr string) (int, error) {
	var lc net.ListenConfig
	if _, port, err := net.SplitHostPort(addr); err == nil && port != "" && port != "0" {
		lc.Control = reuseport.Control
	}
	pc, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		return -1, fmt.Errorf("udp: listen %s: %w", addr, err)
	}
	return detach(pc.(*net.UDPConn))
}

// detach takes the socket of c out of the network poller: it duplicates
// the descriptor, closes c (which removes it from the poller) and makes the
// copy blocking. Every call on it that must not block says MSG_DONTWAIT.
func detach(c *net.UDPConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return -1, fmt.Errorf("udp: %w", err)
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		derr = err
	}
	c.Close()
	if derr == nil {
		derr = unix.SetNonblock(fd, false)
	}
	if derr != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("udp: taking the socket from the poller: %w", derr)
	}
	return fd, nil
}

func (p *Port) setup() error {
	gsoOK := false
	s := p.fd
	sa, serr := unix.Getsockname(s)
	if serr == nil {
		p.rcvBuf = setBuffer(s, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, p.cfg.RecvBuffer)
		p.sndBuf = setBuffer(s, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, p.cfg.SendBuffer)
		if !p.cfg.DisableGRO {
			p.gro = unix.SetsockoptInt(s, unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
		}
		if !p.cfg.DisableGSO {
			// Reading UDP_SEGMENT succeeds where the kernel knows UDP GSO.
			_, e := unix.GetsockoptInt(s, unix.IPPROTO_UDP, unix.UDP_SEGMENT)
			gsoOK = e == nil
		}
		// The kernel's count of datagrams dropped for a full receive
		// buffer comes with every datagram (Stats.RecvOverflows).
		p.ovfl = unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1) == nil
	}
	if serr != nil {
		return fmt.Errorf("udp: getsockname: %w", serr)
	}
	var ap netip.AddrPort
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		p.family = unix.AF_INET
		ap = netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		p.family = unix.AF_INET6
		ap = netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	default:
		return fmt.Errorf("udp: unexpected socket address %T", sa)
	}
	var err error
	if p.local, err = endpointOf(ap); err != nil {
		return err
	}
	if p.wake, err = endpointOf(netip.AddrPortFrom(wakeAddr(ap.Addr(), p.family), ap.Port())); err != nil {
		return err
	}
	if _, err := rand.Read(p.token[:]); err != nil {
		return fmt.Errorf("udp: interrupt token: %w", err)
	}
	p.gso.Store(gsoOK)
	if p.probe, err = newMTUProber(p.family, ap.Addr().Unmap()); err != nil {
		return err
	}
	if p.pl, err = newPoller(p.fd); err != nil {
		p.probe.close()
		return err
	}
	p.conns = make(map[netip.AddrPort]*connSock)
	p.noConn = &connSock{port: p.id, fd: -1}
	p.netns, _ = netnsCookie(p.fd)
	p.rx = newReceiver(p)
	p.sendPool.New = func() any { return newSender(p) }
	return nil
}

// wakeAddr is the address by which the socket reaches itself: its own,
// or loopback when bound to the wildcard.
func wakeAddr(a netip.Addr, family int) netip.Addr {
	if !a.IsUnspecified() {
		return a
	}
	if family == unix.AF_INET6 {
		return netip.IPv6Loopback()
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// setBuffer asks for size bytes of socket buffer, forcing past the system
// limit where permitted, and returns what the kernel granted.
func setBuffer(fd, force, plain, size int) int {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, size)
	}
	got, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, plain)
	return got
}

// BatchSize is the number of datagrams handled per system call.
func (p *Port) BatchSize() int { return p.cfg.BatchSize }

// LocalEndpoint is the address the socket is bound to. A port bound to a
// wildcard address reports the wildcard, which peers cannot use as is.
func (p *Port) LocalEndpoint() fabric.Endpoint { return p.local }

// ParseEndpoint parses "ip:port" into an *Endpoint.
func (p *Port) ParseEndpoint(s string) (fabric.Endpoint, error) {
	e, err := ParseEndpoint(s)
	if err != nil {
		return nil, err
	}
	if _, _, ok := e.sockaddr(p.family); !ok {
		return nil, fmt.Errorf("%w: %s: IPv6 address on an IPv4 socket", ErrBadEndpoint, s)
	}
	return e, nil
}

// Kind is "udp".
func (p *Port) Kind() string { return Kind }

// Alloc returns ordinary memory: UDP has no registered buffers.
func (p *Port) Alloc(n int) []byte { return make([]byte, n) }

// GSO reports whether Send currently coalesces datagrams with UDP GSO.
func (p *Port) GSO() bool { return p.gso.Load() }

// GRO reports whether the socket receives coalesced datagrams.
func (p *Port) GRO() bool { return p.gro }

// SocketBuffers returns the receive and send buffer sizes the kernel
// granted (as getsockopt reports them, which is twice what was set).
func (p *Port) SocketBuffers() (recv, send int) { return p.rcvBuf, p.sndBuf }

// SetReceiveDeadline bounds the wait of Receive and Park: after t a
// blocked or new one returns an error satisfying
// errors.Is(err, os.ErrDeadlineExceeded). The zero time means no deadline.
// (Wait takes its deadline as an argument.)
func (p *Port) SetReceiveDeadline(t time.Time) error {
	if p.closed.Load() {
		return fabric.ErrClosed
	}
	return p.pl.file.SetReadDeadline(t)
}

// SetSendDeadline bounds how long Send waits for room in a full socket
// buffer. The zero time means no deadline.
func (p *Port) SetSendDeadline(t time.Time) error {
	if p.closed.Load() {
		return fabric.ErrClosed
	}
	p.wdeadline.Store(unixNano(t))
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixNano(), 1)
}

// use holds the descriptor open for a call; false means the port is
// closed. Every use ends with p.fdMu.RUnlock.
func (p *Port) use() bool {
	p.fdMu.RLock()
	if p.closed.Load() {
		p.fdMu.RUnlock()
		return false
	}
	return true
}

// Close closes the socket. A blocked Receive, Wait or Send returns
// fabric.ErrClosed. Close is idempotent.
func (p *Port) Close() error {
	var err error
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		// Shutting the socket down wakes the calls blocked on it, closing
		// the poller those parked in it; the descriptor is closed once
		// they have left.
		unix.Shutdown(p.fd, unix.SHUT_RDWR)
		p.pl.close()
		p.fdMu.Lock()
		err = unix.Close(p.fd)
		p.fd = -1
		p.closeConns()
		p.fdMu.Unlock()
		p.probe.close()
	})
	return err
}

// mapErr turns errors met after Close into fabric.ErrClosed.
func (p *Port) mapErr(err error) error {
	if err == nil {
		return nil
	}
	if p.closed.Load() {
		return fabric.ErrClosed
	}
	return err
}
