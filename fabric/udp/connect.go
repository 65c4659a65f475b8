//go:build linux

package udp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Connected send sockets.
//
// A datagram sent alone (sendWhole, sendOne) goes out through a socket of
// the port's own connected to its destination, where there is one: a
// sendto on a connected socket reuses the route the connect resolved,
// where one on the port's unconnected socket looks the route up again
// (on loopback the connected send takes about 0.4 µs of 3 less). The
// socket only sends: it is bound to the port's address with a port of its
// own (the engine above finds a datagram's sender in the datagram, not in
// its source address), and nothing is sent to it but by its destination,
// which sends to the port. Batches (sendmmsg, GSO) and anything the
// connected socket refuses go through the port's socket as before, so the
// errors a Send reports are the port's.
//
// A port connects sockets to its first maxConnected destinations, each
// when a datagram is first sent to it alone. A socket is only used when it
// lives in the port's network namespace (a Send may run on a thread of
// another namespace than Listen did): otherwise, or where the kernel
// cannot tell the namespace, the port sends through its own socket.

// maxConnected bounds the connected sockets (descriptors) of a port.
const maxConnected = 64

// connSock is a socket of port (by id) connected to one destination; fd
// -1 when there is none (the port sends through its own socket).
type connSock struct {
	port uint64
	fd   int
}

// connFor returns the descriptor of the socket connected to ep, or -1.
// The port's descriptor is in use (p.use), which keeps it open.
func (p *Port) connFor(ep *Endpoint) int {
	if c := ep.conn.Load(); c != nil && c.port == p.id {
		return c.fd
	}
	return p.connect(ep)
}

// connect finds or makes the socket connected to ep and caches it in ep.
func (p *Port) connect(ep *Endpoint) int {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	c, ok := p.conns[ep.ap]
	if !ok {
		if len(p.conns) >= maxConnected || p.closed.Load() {
			c = p.noConn
		} else {
			c = &connSock{port: p.id, fd: p.dial(ep)}
			p.conns[ep.ap] = c
		}
	}
	ep.conn.Store(c)
	return c.fd
}

// dial opens a socket in the port's network namespace, bound to the port's
// address (any port) and connected to ep; -1 if it cannot.
func (p *Port) dial(ep *Endpoint) int {
	if p.netns == 0 {
		return -1
	}
	fd, err := unix.Socket(p.family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1
	}
	if ns, err := netnsCookie(fd); err != nil || ns != p.netns {
		unix.Close(fd)
		return -1
	}
	setBuffer(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, p.cfg.SendBuffer)
	local := p.local.ap.Addr()
	var lsa, rsa unix.Sockaddr
	if p.family == unix.AF_INET {
		lsa = &unix.SockaddrInet4{Addr: local.As4()}
		rsa = &unix.SockaddrInet4{Addr: ep.sa4.Addr, Port: int(ep.ap.Port())}
	} else {
		lsa = &unix.SockaddrInet6{Addr: local.As16()}
		rsa = &unix.SockaddrInet6{Addr: ep.sa6.Addr, Port: int(ep.ap.Port())}
	}
	if !local.IsUnspecified() && unix.Bind(fd, lsa) != nil || unix.Connect(fd, rsa) != nil {
		unix.Close(fd)
		return -1
	}
	return fd
}

// netnsCookie identifies the network namespace of socket fd.
func netnsCookie(fd int) (uint64, error) {
	var v uint64
	n := uint32(unsafe.Sizeof(v))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_NETNS_COOKIE,
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return 0, e
	}
	return v, nil
}

// closeConns closes the connected sockets; fdMu is write-held.
func (p *Port) closeConns() {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	for ap, c := range p.conns {
		if c.fd >= 0 {
			unix.Close(c.fd)
			c.fd = -1
		}
		delete(p.conns, ap)
	}
}

// Connected is the number of sockets the port has connected to
// destinations of datagrams it sent alone.
func (p *Port) Connected() int {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	n := 0
	for _, c := range p.conns {
		if c.fd >= 0 {
			n++
		}
	}
	return n
}
