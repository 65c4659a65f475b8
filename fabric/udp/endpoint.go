//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrBadEndpoint is returned for an address that is not a usable UDP
// endpoint: unparsable text, port 0, an Endpoint of another fabric, or an
// address family the socket cannot reach.
var ErrBadEndpoint = errors.New("udp: bad endpoint")

// Endpoint is the address of a remote UDP port. Its String form is
// "ip:port" ("[ip]:port" for IPv6). An Endpoint holds its sockaddr already
// encoded for the kernel, so Send never encodes or allocates; always pass
// *Endpoint values (as ParseEndpoint returns them).
type Endpoint struct {
	ap   netip.AddrPort
	str  string
	sa4  unix.RawSockaddrInet4
	sa6  unix.RawSockaddrInet6 // IPv4 addresses are stored v4-mapped here
	is4  bool
	loop bool
	mtu  atomic.Pointer[mtuEntry]
	conn atomic.Pointer[connSock] // a port's socket connected here (connect.go)
}

// ParseEndpoint parses "ip:port" (IPv4 or IPv6 literal; no host names).
// IPv4-mapped IPv6 addresses are unmapped, so String is canonical.
func ParseEndpoint(s string) (*Endpoint, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrBadEndpoint, s, err)
	}
	return endpointOf(ap)
}

// EndpointOf returns the Endpoint for an address and port.
func EndpointOf(ap netip.AddrPort) (*Endpoint, error) { return endpointOf(ap) }

func endpointOf(ap netip.AddrPort) (*Endpoint, error) {
	addr := ap.Addr().Unmap()
	if !addr.IsValid() {
		return nil, fmt.Errorf("%w: invalid address", ErrBadEndpoint)
	}
	if ap.Port() == 0 {
		return nil, fmt.Errorf("%w: %v: port 0", ErrBadEndpoint, ap)
	}
	if addr.Zone() != "" {
		// The zone would have to be resolved to an interface index; keep
		// endpoints free of that state.
		return nil, fmt.Errorf("%w: %v: zoned addresses are not supported", ErrBadEndpoint, ap)
	}
	ap = netip.AddrPortFrom(addr, ap.Port())
	e := &Endpoint{ap: ap, str: ap.String(), is4: addr.Is4(), loop: addr.IsLoopback()}
	port := ap.Port()
	pb := (*[2]byte)(unsafe.Pointer(&e.sa4.Port))
	pb[0], pb[1] = byte(port>>8), byte(port)
	pb = (*[2]byte)(unsafe.Pointer(&e.sa6.Port))
	pb[0], pb[1] = byte(port>>8), byte(port)
	e.sa4.Family = unix.AF_INET
	e.sa6.Family = unix.AF_INET6
	if e.is4 {
		e.sa4.Addr = addr.As4()
	}
	e.sa6.Addr = addr.As16()
	return e, nil
}

// String returns "ip:port".
func (e *Endpoint) String() string {
	if e == nil {
		return "<nil>"
	}
	return e.str
}

// AddrPort returns the endpoint's address and port.
func (e *Endpoint) AddrPort() netip.AddrPort { return e.ap }

// sockaddr returns the encoded address for a socket of the given family.
func (e *Endpoint) sockaddr(family int) (*byte, uint32, bool) {
	if family == unix.AF_INET {
		if !e.is4 {
			return nil, 0, false
		}
		return (*byte)(unsafe.Pointer(&e.sa4)), unix.SizeofSockaddrInet4, true
	}
	return (*byte)(unsafe.Pointer(&e.sa6)), unix.SizeofSockaddrInet6, true
}

// sameDest reports whether a and b address the same port.
func sameDest(a, b *Endpoint) bool { return a == b || a.ap == b.ap }
