//go:build linux

package udp

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric"
)

const (
	// fallbackMTU is assumed when the route MTU cannot be read.
	fallbackMTU = EthernetMTU
	// mtuTTL is how long a probed MTU is cached in an Endpoint.
	mtuTTL = 30 * time.Second
)

// mtuEntry is a cached MaxDatagram of one Endpoint for one Port (by id,
// so an Endpoint does not keep a closed Port's buffers alive).
type mtuEntry struct {
	port    uint64
	max     int
	expires int64 // unix nanoseconds
}

// MaxDatagram is the largest datagram that reaches to without IP
// fragmentation: 65507 bytes toward loopback, otherwise the route MTU less
// the IP and UDP headers. to must be an *Endpoint; anything else gets the
// conservative answer for a 1500-byte link.
func (p *Port) MaxDatagram(to fabric.Endpoint) int {
	ep, ok := to.(*Endpoint)
	if !ok || ep == nil {
		return fallbackMTU - ipv6Overhead
	}
	return p.maxDatagram(ep, time.Now().UnixNano())
}

func (p *Port) overhead(ep *Endpoint) int {
	if ep.is4 {
		return ipv4Overhead
	}
	return ipv6Overhead
}

// maxFor is the size limit Send enforces: the cached MaxDatagram when
// there is one (without looking at the clock), else a fresh probe.
func (p *Port) maxFor(ep *Endpoint) int {
	if p.cfg.MTU != 0 {
		return min(p.cfg.MTU-p.overhead(ep), MaxPayload)
	}
	if ep.loop {
		return MaxPayload
	}
	if e := ep.mtu.Load(); e != nil && e.port == p.id {
		return e.max
	}
	return p.maxDatagram(ep, time.Now().UnixNano())
}

func (p *Port) maxDatagram(ep *Endpoint, now int64) int {
	if p.cfg.MTU != 0 {
		return min(p.cfg.MTU-p.overhead(ep), MaxPayload)
	}
	if ep.loop {
		return MaxPayload
	}
	if e := ep.mtu.Load(); e != nil && e.port == p.id && now < e.expires {
		return e.max
	}
	mtu, err := p.probe.mtu(ep, p.family)
	if err != nil {
		return fallbackMTU - p.overhead(ep)
	}
	m := min(mtu-p.overhead(ep), MaxPayload)
	ep.mtu.Store(&mtuEntry{port: p.id, max: m, expires: now + int64(mtuTTL)})
	return m
}

// mtuProber reads route MTUs through a spare UDP socket that it connects
// to the destination in question: connecting a UDP socket sends nothing
// but resolves the route, whose MTU IP_MTU/IPV6_MTU then reports. The
// socket is created with the port, so it lives in the same network
// namespace and is bound to the same local address.
type mtuProber struct {
	mu sync.Mutex
	fd int
}

func newMTUProber(family int, local netip.Addr) (*mtuProber, error) {
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, fmt.Errorf("udp: probe socket: %w", err)
	}
	if !local.IsUnspecified() {
		var sa unix.Sockaddr
		if family == unix.AF_INET {
			sa = &unix.SockaddrInet4{Addr: local.As4()}
		} else {
			sa = &unix.SockaddrInet6{Addr: local.As16()}
		}
		if err := unix.Bind(fd, sa); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("udp: bind probe socket: %w", err)
		}
	}
	return &mtuProber{fd: fd}, nil
}

func (m *mtuProber) mtu(ep *Endpoint, family int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fd < 0 {
		return 0, fabric.ErrClosed
	}
	var sa unix.Sockaddr
	if family == unix.AF_INET {
		if !ep.is4 {
			return 0, ErrBadEndpoint
		}
		sa = &unix.SockaddrInet4{Addr: ep.sa4.Addr, Port: int(ep.ap.Port())}
	} else {
		sa = &unix.SockaddrInet6{Addr: ep.sa6.Addr, Port: int(ep.ap.Port())}
	}
	if err := unix.Connect(m.fd, sa); err != nil {
		return 0, err
	}
	// The socket stays connected until the next probe connects it
	// elsewhere; it never sends, and nothing is sent to its port.
	if family == unix.AF_INET6 {
		if v, err := unix.GetsockoptInt(m.fd, unix.IPPROTO_IPV6, unix.IPV6_MTU); err == nil {
			return v, nil
		}
	}
	return unix.GetsockoptInt(m.fd, unix.IPPROTO_IP, unix.IP_MTU)
}

func (m *mtuProber) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fd >= 0 {
		unix.Close(m.fd)
		m.fd = -1
	}
}
