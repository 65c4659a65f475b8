//go:build linux

package udp

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric"
)

// maxGSOSegments is the most datagrams one GSO send carries (the kernel's
// UDP_MAX_SEGMENTS on older kernels; newer ones allow more).
const maxGSOSegments = 64

// gsoCmsgSpace is the room of one UDP_SEGMENT control message.
var gsoCmsgSpace = unix.CmsgSpace(2)

// sender holds the preallocated system-call arrays of one Send in flight.
// Senders are pooled so concurrent Sends do not share them.
type sender struct {
	p    *Port
	hdrs []unix.Mmsghdr
	iovs []unix.Iovec
	ctrl []byte
	ndg  []int // datagrams carried by each message
	nmsg int   // messages built
	niov int   // high-water marks of iovecs and messages used,
	nhdr int   // cleared on release

	// state of one transmit
	sent  int
	errno unix.Errno

	// one holds a small datagram sent alone, head and body together
	// (sendOne).
	one [oneMax]byte
}

// oneMax is the largest datagram that a Send of one datagram copies into
// one buffer and sends with sendto.
const oneMax = 512

func newSender(p *Port) any {
	b := p.cfg.BatchSize
	s := &sender{
		p:    p,
		hdrs: make([]unix.Mmsghdr, b),
		iovs: make([]unix.Iovec, 2*b),
		ctrl: make([]byte, b*gsoCmsgSpace),
		ndg:  make([]int, b),
	}
	for i := 0; i < b; i++ {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&s.ctrl[i*gsoCmsgSpace]))
		c.Level = unix.IPPROTO_UDP
		c.Type = unix.UDP_SEGMENT
		c.SetLen(unix.CmsgLen(2))
	}
	return s
}

// Send transmits dgs in order, in batches of up to BatchSize datagrams per
// sendmmsg, coalescing same-destination same-size runs into GSO sends (a
// lone datagram goes by sendto: from its Head if it has no Body, see
// sendWhole, else copied if it is at most oneMax bytes, see sendOne). It
// returns the number of datagrams the kernel took. A datagram larger than
// MaxDatagram(To) stops the batch with fabric.ErrTooBig; a To that is not an
// *Endpoint of this port's address family stops it with ErrBadEndpoint.
// Datagrams to an unreachable destination are dropped (Stats.SendDropped)
// as a network would drop them. A full socket buffer makes Send wait.
//
// Send defers nothing (a deferred call cost a third of a small datagram's
// Send in user space): what it calls returns its errors, it panics on none.
func (p *Port) Send(dgs []fabric.Datagram) (int, error) {
	if !p.use() {
		return 0, fabric.ErrClosed
	}
	if len(dgs) == 0 {
		p.fdMu.RUnlock()
		return 0, nil
	}
	if len(dgs) == 1 && len(dgs[0].Body) == 0 && len(dgs[0].Head) > 0 {
		// One datagram in one buffer: sent from it, no sender needed.
		n, err := p.sendWhole(&dgs[0])
		p.fdMu.RUnlock()
		return n, err
	}
	s := p.sendPool.Get().(*sender)
	var n int
	var err error
	if len(dgs) == 1 && dgs[0].Len() <= oneMax {
		n, err = s.sendOne(&dgs[0])
	} else {
		n, err = s.send(dgs)
	}
	s.release()
	p.fdMu.RUnlock()
	return n, err
}

// send is Send of a batch, with the sender s and the descriptor held.
func (s *sender) send(dgs []fabric.Datagram) (int, error) {
	p := s.p
	done := 0
	useGSO := p.gso.Load()
	probeRun := 0 // size of a refused GSO run now being sent one by one
	for done < len(dgs) {
		nd, verr := s.build(dgs[done:], useGSO)
		if s.nmsg > 0 {
			m, errno, err := s.transmit()
			k := s.dgCount(m)
			done += k
			if probeRun > 0 && k >= probeRun {
				// The datagrams the kernel refused as one GSO send went
				// through one by one: GSO itself is what failed.
				p.disableGSO()
				probeRun = 0
			}
			if err != nil {
				return done, p.mapErr(err)
			}
			if errno != 0 {
				if s.ndg[m] > 1 {
					useGSO = false
					probeRun = s.ndg[m]
					continue
				}
				if p.closed.Load() {
					// Close shut the socket down under this send: the
					// kernel says EPIPE, the caller is owed ErrClosed.
					return done, fabric.ErrClosed
				}
				d := &dgs[done]
				if errno == unix.EMSGSIZE {
					return done, fmt.Errorf("udp: %d bytes to %v: %w (%w)", d.Len(), d.To, fabric.ErrTooBig, errno)
				}
				return done, fmt.Errorf("udp: send to %v: %w", d.To, errno)
			}
		}
		if verr != nil {
			return done, verr
		}
		if nd == 0 {
			break // not reached: build always consumes or fails
		}
	}
	return done, nil
}

func (p *Port) disableGSO() {
	if p.gso.CompareAndSwap(true, false) {
		p.st.gsoFallbacks.Add(1)
	}
}

// sendOne sends d, a datagram of at most oneMax bytes and the only one of
// its Send, with sendto from a copy of its head and body: the kernel then
// takes one buffer and an address, where sendmmsg copies a message header
// and imports an array of iovecs (on loopback, a small datagram's sendto
// takes about a sixth less time than the same sendmmsg). A copy of a few
// hundred bytes costs much less than that.
func (s *sender) sendOne(d *fabric.Datagram) (int, error) {
	p := s.p
	ep, err := p.check(d)
	if err != nil {
		return 0, err
	}
	n := copy(s.one[:], d.Head)
	n += copy(s.one[n:], d.Body)
	return p.sendBuf(d, ep, &s.one[0], n)
}

// sendWhole sends d, a datagram whose Head holds all of it (no Body), the
// only one of its Send, with sendto from Head itself: no sender, no copy
// (a datagram the caller built whole, as the engine's lone small sends).
func (p *Port) sendWhole(d *fabric.Datagram) (int, error) {
	ep, err := p.check(d)
	if err != nil {
		return 0, err
	}
	return p.sendBuf(d, ep, &d.Head[0], len(d.Head))
}

// sendBuf sends the n bytes at b, datagram d, to ep with sendto.
func (p *Port) sendBuf(d *fabric.Datagram, ep *Endpoint, b *byte, n int) (int, error) {
	st := &p.st
	if n > 0 {
		// Through the socket connected to ep, if any; whatever it
		// refuses goes through the port's socket below.
		if fd := p.connFor(ep); fd >= 0 {
			for {
				e := sendto(uintptr(fd), b, n, nil, 0)
				st.sendCalls.Add(1)
				if e == 0 {
					st.sentDatagrams.Add(1)
					st.connectedSends.Add(1)
					return 1, nil
				}
				if e != unix.EINTR {
					break
				}
			}
		}
	}
	name, namelen, _ := ep.sockaddr(p.family)
	for {
		e := sendto(uintptr(p.fd), b, n, name, namelen)
		st.sendCalls.Add(1)
		switch {
		case e == 0:
			st.sentDatagrams.Add(1)
			return 1, nil
		case e == unix.EINTR:
		case e == unix.EAGAIN:
			st.sendWaits.Add(1)
			if err := p.waitWritable(); err != nil {
				return 0, p.mapErr(err)
			}
		case dropErr(e):
			st.sendDropped.Add(1)
			return 1, nil
		case p.closed.Load():
			return 0, fabric.ErrClosed // as in Send
		case e == unix.EMSGSIZE:
			return 0, fmt.Errorf("udp: %d bytes to %v: %w (%w)", n, d.To, fabric.ErrTooBig, e)
		default:
			return 0, fmt.Errorf("udp: send to %v: %w", d.To, e)
		}
	}
}

// check validates one datagram and returns its destination and size limit.
func (p *Port) check(d *fabric.Datagram) (*Endpoint, error) {
	ep, ok := d.To.(*Endpoint)
	if !ok || ep == nil {
		return nil, fmt.Errorf("%w: %T is not a *udp.Endpoint", ErrBadEndpoint, d.To)
	}
	if p.family == unix.AF_INET && !ep.is4 {
		return nil, fmt.Errorf("%w: %v: IPv6 destination on an IPv4 socket", ErrBadEndpoint, ep)
	}
	if n, max := d.Len(), p.maxFor(ep); n > max {
		return nil, fmt.Errorf("udp: %d bytes to %v (max %d): %w", n, ep, max, fabric.ErrTooBig)
	}
	return ep, nil
}

// build fills the message arrays from a prefix of dgs of at most BatchSize
// datagrams. It returns how many datagrams it took; a non-nil error means
// dgs[n] is invalid.
func (s *sender) build(dgs []fabric.Datagram, useGSO bool) (int, error) {
	p := s.p
	s.nmsg = 0
	n := min(len(dgs), len(s.hdrs))
	iov := 0
	i := 0
	for i < n {
		d := &dgs[i]
		ep, err := p.check(d)
		if err != nil {
			s.mark(iov)
			return i, err
		}
		h := &s.hdrs[s.nmsg].Hdr
		h.Name, h.Namelen, _ = ep.sockaddr(p.family)
		h.Iov = &s.iovs[iov]
		first := iov
		iov = s.addIov(iov, d)
		size := d.Len()
		cnt := 1
		i++
		if useGSO && size > 0 {
			total := size
			for i < n && cnt < maxGSOSegments {
				d2 := &dgs[i]
				ep2, ok := d2.To.(*Endpoint)
				if !ok || ep2 == nil || !sameDest(ep, ep2) {
					break
				}
				l := d2.Len()
				if l == 0 || l > size || total+l > MaxPayload {
					break
				}
				iov = s.addIov(iov, d2)
				total += l
				cnt++
				i++
				if l < size {
					break // only the last datagram of a run may be shorter
				}
			}
		}
		h.SetIovlen(iov - first)
		if cnt > 1 {
			off := s.nmsg * gsoCmsgSpace
			*(*uint16)(unsafe.Pointer(&s.ctrl[off+unix.CmsgLen(0)])) = uint16(size)
			h.Control = &s.ctrl[off]
			h.SetControllen(gsoCmsgSpace)
		} else {
			h.Control = nil
			h.SetControllen(0)
		}
		s.ndg[s.nmsg] = cnt
		s.nmsg++
	}
	s.mark(iov)
	return i, nil
}

// mark records how much of the arrays holds pointers, for release.
func (s *sender) mark(iov int) {
	s.niov = max(s.niov, iov)
	s.nhdr = max(s.nhdr, s.nmsg)
}

func (s *sender) addIov(iov int, d *fabric.Datagram) int {
	if len(d.Head) > 0 {
		s.iovs[iov].Base = &d.Head[0]
		s.iovs[iov].SetLen(len(d.Head))
		iov++
	}
	if len(d.Body) > 0 {
		s.iovs[iov].Base = &d.Body[0]
		s.iovs[iov].SetLen(len(d.Body))
		iov++
	}
	return iov
}

// dgCount is the number of datagrams in the first m messages.
func (s *sender) dgCount(m int) int {
	k := 0
	for _, c := range s.ndg[:m] {
		k += c
	}
	return k
}

// transmit sends the built messages. It returns how many messages the
// kernel took (or dropped as undeliverable), the errno that stopped it at
// the next one, or an error of the wait for room (closed port, deadline).
// The descriptor is in use (p.use).
func (s *sender) transmit() (int, unix.Errno, error) {
	s.sent, s.errno = 0, 0
	for !s.attempt(uintptr(s.p.fd)) {
		if err := s.p.waitWritable(); err != nil {
			return s.sent, 0, err
		}
	}
	return s.sent, s.errno, nil
}

// waitWritable waits for room in the socket's send buffer, until the send
// deadline or Close.
func (p *Port) waitWritable() error {
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLOUT}}
	for {
		if p.closed.Load() {
			return fabric.ErrClosed
		}
		// Wake now and then to notice Close (shutdown also wakes poll).
		ms := 100
		if dl := p.wdeadline.Load(); dl != 0 {
			d := dl - time.Now().UnixNano()
			if d <= 0 {
				return os.ErrDeadlineExceeded
			}
			ms = min(ms, int((d+int64(time.Millisecond)-1)/int64(time.Millisecond)))
		}
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("poll", err)
		}
		if n > 0 {
			if p.closed.Load() {
				return fabric.ErrClosed
			}
			return nil
		}
	}
}

// attempt sends messages until all are taken, an error stops it (true) or
// the socket buffer is full (false: wait for room and call again).
func (s *sender) attempt(fd uintptr) bool {
	st := &s.p.st
	for s.sent < s.nmsg {
		n, e := sendmmsg(fd, s.hdrs[s.sent:s.nmsg])
		st.sendCalls.Add(1)
		switch {
		case e == 0:
			s.account(s.sent, s.sent+n)
			s.sent += n
		case e == unix.EINTR:
		case e == unix.EAGAIN:
			st.sendWaits.Add(1)
			return false
		case dropErr(e):
			st.sendDropped.Add(uint64(s.ndg[s.sent]))
			s.sent++
		default:
			s.errno = e
			return true
		}
	}
	return true
}

func (s *sender) account(from, to int) {
	var dgs, gsoMsgs, gsoSegs uint64
	for _, c := range s.ndg[from:to] {
		dgs += uint64(c)
		if c > 1 {
			gsoMsgs++
			gsoSegs += uint64(c)
		}
	}
	st := &s.p.st
	st.sentDatagrams.Add(dgs)
	if gsoMsgs > 0 {
		st.gsoSends.Add(gsoMsgs)
		st.gsoSegments.Add(gsoSegs)
	}
}

// dropErr reports errors that concern one destination only: the datagram
// is lost as a network would lose it, and the batch goes on.
func dropErr(e unix.Errno) bool {
	switch e {
	case unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH, unix.EHOSTDOWN,
		unix.ENETDOWN, unix.EPERM, unix.EACCES, unix.ENOBUFS:
		return true
	}
	return false
}

// release drops the references to the caller's buffers and returns the
// sender to the pool.
func (s *sender) release() {
	for i := range s.iovs[:s.niov] {
		s.iovs[i].Base = nil
	}
	for i := range s.hdrs[:s.nhdr] {
		s.hdrs[i].Hdr.Name = nil
		s.hdrs[i].Hdr.Iov = nil
		s.hdrs[i].Hdr.Control = nil
	}
	s.niov, s.nhdr, s.nmsg = 0, 0, 0
	s.p.sendPool.Put(s)
}
