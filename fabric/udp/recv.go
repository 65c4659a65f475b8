//go:build linux

package udp

import (
	"encoding/binary"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric"
)

// RecvBufferSize is the size of each receive buffer: room for the largest
// UDP datagram or GRO-coalesced run.
const RecvBufferSize = 1 << 16

// Room for the control messages of one received buffer: UDP_GRO's segment
// size and SO_RXQ_OVFL's drop count (an int and a uint32).
var (
	groCmsgSpace  = unix.CmsgSpace(4)
	ovflCmsgSpace = unix.CmsgSpace(4)
)

// How a receive waits.
const (
	recvPoll  = iota // never: Poll
	recvBlock        // in the runtime's poller until a datagram arrives: Receive
	recvPark         // in the runtime's poller until a datagram or Interrupt: Park
	recvWait         // in the kernel until a datagram, Interrupt or the deadline: Wait
)

// receiver owns the receive buffers and recvmmsg arrays of a port. The
// datagrams of one recvmmsg call (after GRO buffers are split) wait in segs
// until the caller has taken them all; only then are the buffers reused.
type receiver struct {
	p     *Port
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	buf   []byte
	ctrl  []byte
	cspc  int // control room per buffer
	segs  [][]byte
	next  int
	woken bool // an interrupt came in the last call
	dirty int  // hdrs[:dirty] may hold what the kernel wrote back
	// want is how many buffers the next recvmmsg offers (at most the
	// batch): after the datagrams queued, recvmmsg tries once more and
	// finds nothing, which costs about an empty look (150-200 ns a
	// datagram here); a ping-pong, one datagram a call, offers one. A
	// full batch right after another (a backlog) doubles it, a partial
	// one halves it (no lower than what came); full says the last call
	// filled what it offered and no empty look came since.
	want int
	full bool

	timeo int64 // SO_RCVTIMEO now set on the socket, nanoseconds (0: none)

	// Expectations (Expect), under p.placeMu: exp[i] is where the body
	// of the i-th datagram of the next receive that does not wait goes,
	// after expHead bytes of header; fits says whether it was the one
	// expected. iov3 holds the three iovecs of each slot received so:
	// header, expected body, and the rest of the slot's buffer (for a
	// longer datagram). placing is the number of slots set up so for the
	// call under way.
	exp     [][]byte
	expHead int
	fits    func(i int, dg []byte, n int) bool
	iov3    []unix.Iovec
	placing int
	// lead (Lead), under p.placeMu: called once with the head of the
	// next datagram, peeked before it is received; head is its buffer.
	lead func(dg []byte, n int)
	head []byte
}

func newReceiver(p *Port) *receiver {
	b := p.cfg.BatchSize
	r := &receiver{
		p:     p,
		hdrs:  make([]unix.Mmsghdr, b),
		iovs:  make([]unix.Iovec, b),
		buf:   make([]byte, b*RecvBufferSize),
		segs:  make([][]byte, 0, b*maxGSOSegments),
		dirty: b,
		exp:   make([][]byte, 0, b),
		iov3:  make([]unix.Iovec, 3*b),
		head:  make([]byte, 256),
	}
	if p.gro {
		r.cspc += groCmsgSpace
	}
	if p.ovfl {
		r.cspc += ovflCmsgSpace
	}
	r.ctrl = make([]byte, b*r.cspc)
	for i := range r.hdrs {
		r.iovs[i].Base = &r.buf[i*RecvBufferSize]
		r.iovs[i].SetLen(RecvBufferSize)
		h := &r.hdrs[i].Hdr
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		if r.cspc > 0 {
			h.Control = &r.ctrl[i*r.cspc]
		}
	}
	return r
}

// Receive blocks until at least one datagram has arrived and stores up to
// len(msgs) of them in msgs. The slices alias the port's buffers and stay
// valid until the next Receive, Poll, Park or Wait. GRO-coalesced buffers
// come back as the separate datagrams they were sent as. The goroutine
// waits in the runtime's network poller, holding no thread. After Close it
// returns fabric.ErrClosed; after the deadline set by SetReceiveDeadline,
// an error satisfying errors.Is(err, os.ErrDeadlineExceeded).
func (p *Port) Receive(msgs [][]byte) (int, error) { return p.receive(msgs, recvBlock, 0) }

// Poll is Receive that never blocks: it returns 0 when nothing waits.
// Like Wait, it takes the socket out of the runtime's poller until the
// next Receive or Park.
func (p *Port) Poll(msgs [][]byte) (int, error) { return p.receive(msgs, recvPoll, 0) }

// Park is Receive that also returns, with 0 datagrams and a nil error,
// when Interrupt is called (before or during the wait): the wait of a
// goroutine that owns the port while no thread drives it.
func (p *Port) Park(msgs [][]byte) (int, error) { return p.receive(msgs, recvPark, 0) }

// Wait is Receive on the calling goroutine's own OS thread, for a caller
// that drives the port itself while it waits for its own message: the
// thread sleeps in the kernel, in recvmmsg, and the datagram that ends the
// wait wakes it and no other thread (the socket is meanwhile switched off
// in the poller Receive and Park wait in). Wait also returns, with 0
// datagrams and a nil error, when Interrupt is called (before or during
// the wait), and with an error satisfying errors.Is(err,
// os.ErrDeadlineExceeded) once deadline (if not zero) has passed. While
// it sleeps the goroutine keeps its thread and, for a while, its share of
// GOMAXPROCS: bound the sleep by a deadline where other goroutines must
// run.
func (p *Port) Wait(msgs [][]byte, deadline time.Time) (int, error) {
	return p.receive(msgs, recvWait, unixNano(deadline))
}

// Interrupt makes a Wait or Park in progress return, or the next one if
// none is: it sends the socket a datagram holding the port's token (16
// random bytes), which Receive, Poll, Park and Wait take for an interrupt
// and never hand over. An interrupt taken by Receive or Poll is gone.
func (p *Port) Interrupt() error {
	if !p.use() {
		return fabric.ErrClosed
	}
	defer p.fdMu.RUnlock()
	name, namelen, _ := p.wake.sockaddr(p.family)
	for {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(p.fd), uintptr(unsafe.Pointer(&p.token[0])), tokenSize, unix.MSG_DONTWAIT,
			uintptr(unsafe.Pointer(name)), uintptr(namelen))
		switch e {
		case 0:
			p.st.interrupts.Add(1)
			return nil
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.ENOBUFS:
			// The socket's send buffer is full, so a Wait on it is about
			// to return anyway.
			return nil
		}
		return os.NewSyscallError("sendto", e)
	}
}

// Expect names where the bodies of the next datagrams are expected (see
// fabric.Placer). Only a receive that does not wait uses them (Poll, and
// the look without waiting that Receive, Park and Wait begin with); they
// serve until a receive returns datagrams. Expect(0, nil, nil) waits
// for a receive using them to end, and withdraws them.
func (p *Port) Expect(head int, bodies [][]byte, fits func(i int, dg []byte, n int) bool) {
	p.placeMu.Lock()
	r := p.rx
	r.forget()
	if head > 0 && head < RecvBufferSize && fits != nil {
		for _, b := range bodies {
			if len(r.exp) == cap(r.exp) || len(b) == 0 || head+len(b) > RecvBufferSize {
				break
			}
			r.exp = append(r.exp, b)
		}
		if len(r.exp) > 0 {
			r.expHead, r.fits = head, fits
		}
	}
	p.expecting.Store(len(r.exp) > 0)
	p.placeMu.Unlock()
}

// Lead asks the port to show fn the head of the next datagram before it
// receives it, when it has no expectations then: the next receive (but an
// interrupt's) begins by peeking at the first datagram queued (a system
// call more), calls fn with up to 256 bytes of its head and its length,
// and receives it with the expectations fn has made meanwhile (Expect).
// fn is called once, on the receiving goroutine, with none of the port's
// locks held but its receive's; Lead(nil) takes it back. A port with fn
// set ends a receive with expectations at the last datagram expected,
// rather than one after it.
func (p *Port) Lead(fn func(dg []byte, n int)) {
	p.placeMu.Lock()
	p.rx.lead = fn
	p.leading.Store(fn != nil)
	p.placeMu.Unlock()
}

func (p *Port) receive(msgs [][]byte, how int, deadline int64) (int, error) {
	if len(msgs) == 0 {
		if p.closed.Load() {
			return 0, fabric.ErrClosed
		}
		return 0, nil
	}
	p.recvMu.Lock()
	if !p.use() {
		p.recvMu.Unlock()
		return 0, fabric.ErrClosed
	}
	n, err := p.receiveLocked(msgs, how, deadline)
	p.fdMu.RUnlock()
	p.recvMu.Unlock()
	return n, err
}

// receiveLocked is receive with recvMu and the socket held (no defers:
// an empty Poll is the step of a polling thread's spin).
func (p *Port) receiveLocked(msgs [][]byte, how int, deadline int64) (int, error) {
	r := p.rx
	// Only Receive and Park wait in the runtime's poller; while the port
	// is polled or waited on in the kernel, the socket is out of it, so
	// that no datagram wakes a poller thread for nothing (a polling
	// ping-pong otherwise woke one per datagram, which took a CPU from
	// the polling threads).
	if err := p.pl.watch(p.fd, how == recvBlock || how == recvPark); err != nil {
		return 0, err
	}
	looked := false
	for {
		if r.next < len(r.segs) {
			n := copy(msgs, r.segs[r.next:])
			r.next += n
			p.st.recvDatagrams.Add(uint64(n))
			return n, nil
		}
		// Look without waiting first; then wait as asked. (A Wait looks
		// first only where it has expectations to use: a look costs a
		// system call.)
		fillHow := how
		if how == recvBlock || how == recvPark || how == recvWait && !looked && p.expecting.Load() {
			fillHow = recvPoll
			looked = true
		}
		got, err := r.fill(min(len(msgs), len(r.hdrs)), fillHow, deadline)
		if p.closed.Load() {
			return 0, fabric.ErrClosed
		}
		if err != nil {
			return 0, err
		}
		if len(r.segs) > 0 {
			continue
		}
		switch {
		case r.woken && (how == recvPark || how == recvWait):
			return 0, nil
		case how == recvPoll:
			return 0, nil
		case got > 0 || how == recvWait:
			// Only interrupts or truncated buffers came (or a Wait's
			// first look found nothing): look again.
		default:
			if err := p.pl.wait(); err != nil {
				if p.closed.Load() {
					return 0, fabric.ErrClosed
				}
				return 0, err
			}
		}
	}
}

// fill runs one recvmmsg for up to count buffers and splits what arrived
// into r.segs. A blocking call sleeps in the kernel until the first
// datagram (MSG_WAITFORONE), bounded by the deadline through SO_RCVTIMEO.
func (r *receiver) fill(count, how int, deadline int64) (int, error) {
	r.segs, r.next, r.woken = r.segs[:0], 0, false
	for {
		flags := unix.MSG_DONTWAIT
		if how != recvPoll {
			flags = unix.MSG_WAITFORONE
		}
		// The kernel writes back the headers of the datagrams it
		// returns only: reset those (all of them after an error other
		// than finding nothing).
		for i := range r.hdrs[:r.dirty] {
			h := &r.hdrs[i].Hdr
			h.SetControllen(r.cspc)
			h.Flags = 0
		}
		r.dirty = 0
		if how != recvPoll {
			if err := r.setTimeout(deadline); err != nil {
				return 0, err
			}
		}
		k := count
		placing := r.p.expecting.Load()
		if !placing {
			// Expectations name memory for a run of datagrams: offer
			// the batch then.
			k = min(k, max(r.want, 1))
		}
		var e unix.Errno
		if placing && how != recvPoll {
			// Wait for a datagram without taking it, so that it is
			// received with the expectations (a system call more).
			e = peekWait(uintptr(r.p.fd))
			flags = unix.MSG_DONTWAIT
			placing = r.p.expecting.Load()
		} else if !placing && r.p.leading.Load() {
			// Show the caller the next datagram's head first, so that
			// it can expect the datagram itself.
			var n int
			if n, e = peekHead(uintptr(r.p.fd), r.head, how == recvPoll); e == 0 {
				r.p.placeMu.Lock()
				fn := r.lead
				r.lead = nil
				r.p.leading.Store(false)
				r.p.placeMu.Unlock()
				if fn != nil && n > 0 && !r.isToken(r.head, n) {
					fn(r.head[:min(n, len(r.head))], n)
				}
				flags = unix.MSG_DONTWAIT
				placing = r.p.expecting.Load()
			}
		}
		n := 0
		locked := false
		if e == 0 {
			if placing {
				r.p.placeMu.Lock()
				locked = true
				k = r.place(k)
			}
			if k == 1 {
				n, e = recvmsg(uintptr(r.p.fd), &r.hdrs[0], flags)
			} else {
				n, e = recvmmsg(uintptr(r.p.fd), r.hdrs[:k], flags)
			}
		}
		switch e {
		case 0:
			r.dirty = n
		case unix.EAGAIN, unix.EINTR:
			// Nothing received, nothing written back (an empty poll
			// resetting all the headers took a fifth of its time).
			r.dirty = 0
		default:
			r.dirty = k
		}
		if e == 0 && n > 0 {
			r.p.st.recvCalls.Add(1)
			r.split(n)
			if n < k {
				r.want, r.full = max(n, r.want/2), false
			} else if r.full {
				r.want = min(2*k, len(r.hdrs))
			} else {
				r.full = true
			}
		} else {
			r.full = false
		}
		if locked {
			r.unplace(e == 0 && n > 0)
			r.p.placeMu.Unlock()
		}
		switch e {
		case 0:
			return n, nil
		case unix.EAGAIN:
			if how == recvPoll {
				return 0, nil
			}
			// SO_RCVTIMEO ran out: the deadline, or an earlier bound.
		case unix.EINTR, unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH:
			// Interrupted, or an ICMP error reported on the socket
			// (reading it clears it): look again.
		default:
			return 0, os.NewSyscallError("recvmmsg", e)
		}
		if r.p.closed.Load() {
			return 0, fabric.ErrClosed
		}
	}
}

// setTimeout bounds the next blocking recvmmsg by the deadline. A bound
// already set within a quarter of the time left is kept, so that a caller
// passing "now + d" each time costs one setsockopt, not one per call; the
// wait then ends up to a quarter early (and is resumed) or late.
func (r *receiver) setTimeout(deadline int64) error {
	var d int64
	if deadline != 0 {
		d = deadline - time.Now().UnixNano()
		if d <= 0 {
			return os.ErrDeadlineExceeded
		}
		d = max(d, int64(time.Microsecond))
		if r.timeo > 0 && r.timeo >= d-d/4 && r.timeo <= d+d/4 {
			return nil
		}
	}
	if d == r.timeo {
		return nil
	}
	tv := unix.NsecToTimeval(d)
	if d > 0 && tv.Sec == 0 && tv.Usec == 0 {
		tv.Usec = 1
	}
	if err := unix.SetsockoptTimeval(r.p.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	r.timeo = d
	return nil
}

// place sets up the first of count slots to receive the bodies of the
// expected datagrams into the memory named, and returns how many
// datagrams to take: one more than expected at most, so that a batch
// ends soon after the last region expected (the one more, when it
// starts a message, lets the caller expect the rest of it next time),
// or, with a lead to call (Lead), none more: the lead is shown the next
// datagram's head before it is received. p.placeMu is held.
func (r *receiver) place(count int) int {
	r.placing = min(len(r.exp), count)
	if r.placing == 0 {
		return count
	}
	if r.lead != nil {
		count = min(count, r.placing)
	} else {
		count = min(count, r.placing+1)
	}
	for i, b := range r.exp[:r.placing] {
		v := r.iov3[3*i : 3*i+3]
		slot := r.buf[i*RecvBufferSize : (i+1)*RecvBufferSize]
		v[0].Base = &slot[0]
		v[0].SetLen(r.expHead)
		v[1].Base = &b[0]
		v[1].SetLen(len(b))
		v[2].Base = &slot[r.expHead+len(b)]
		v[2].SetLen(RecvBufferSize - r.expHead - len(b))
		h := &r.hdrs[i].Hdr
		h.Iov = &v[0]
		h.SetIovlen(3)
	}
	return count
}

// unplace gives the slots set up by place their own buffers back, and
// forgets the expectations once datagrams came. p.placeMu is held.
func (r *receiver) unplace(got bool) {
	for i := range r.placing {
		h := &r.hdrs[i].Hdr
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		clear(r.iov3[3*i : 3*i+3])
	}
	r.placing = 0
	if got {
		r.forget()
		r.p.expecting.Store(false)
	}
}

// forget drops the expectations. p.placeMu is held.
func (r *receiver) forget() {
	clear(r.exp)
	r.exp = r.exp[:0]
	r.fits = nil
}

// settle makes buffer i, received with its body expected elsewhere, whole
// (the body copied back behind the header), unless it is the datagram
// expected: then it reports true and the datagram is its header alone.
// p.placeMu is held.
func (r *receiver) settle(i, n int, gro bool) bool {
	off := i * RecvBufferSize
	b := r.exp[i]
	if n <= r.expHead {
		return false
	}
	if !gro && n == r.expHead+len(b) && r.fits(i, r.buf[off:off+r.expHead:off+r.expHead], n) {
		r.p.st.placed.Add(1)
		return true
	}
	copy(r.buf[off+r.expHead:off+n], b)
	r.p.st.misplaced.Add(1)
	return false
}

// split turns the n filled buffers into datagrams, cutting GRO buffers at
// their segment size and leaving out interrupts (the port's token, whole in
// its buffer: settle puts back a body received elsewhere).
func (r *receiver) split(n int) {
	var trunc, gro uint64
	for i := range r.hdrs[:n] {
		h := &r.hdrs[i]
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			trunc++
			continue
		}
		seg, drops := r.control(i, int(h.Hdr.Controllen))
		if drops > 0 {
			r.p.st.noteOverflow(drops)
		}
		off := i * RecvBufferSize
		if i < r.placing && r.settle(i, int(h.Len), seg > 0 && seg < int(h.Len)) {
			r.segs = append(r.segs, r.buf[off:off+r.expHead:off+r.expHead])
			continue
		}
		buf := r.buf[off : off+int(h.Len) : off+int(h.Len)]
		if r.isToken(buf, len(buf)) {
			r.woken = true
			continue
		}
		if seg <= 0 || seg >= len(buf) {
			r.segs = append(r.segs, buf)
			continue
		}
		gro++
		for len(buf) > 0 {
			k := min(seg, len(buf))
			r.segs = append(r.segs, buf[:k:k])
			buf = buf[k:]
		}
	}
	if trunc > 0 {
		r.p.st.recvTruncated.Add(trunc)
	}
	if gro > 0 {
		r.p.st.groBuffers.Add(gro)
	}
}

// control reads buffer i's control messages: the GRO segment size (0 when
// there is none) and the socket's count of overflow drops (0 when absent).
func (r *receiver) control(i, clen int) (seg int, drops uint32) {
	if r.cspc == 0 {
		return 0, 0
	}
	ctrl := r.ctrl[i*r.cspc:]
	clen = min(clen, r.cspc)
	for off := 0; off+unix.SizeofCmsghdr <= clen; {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[off]))
		l := int(c.Len)
		if l < unix.SizeofCmsghdr || off+l > clen {
			break
		}
		if l >= unix.CmsgLen(4) {
			v := binary.NativeEndian.Uint32(ctrl[off+unix.CmsgLen(0):])
			switch {
			case c.Level == unix.IPPROTO_UDP && c.Type == unix.UDP_GRO:
				seg = int(int32(v))
			case c.Level == unix.SOL_SOCKET && c.Type == unix.SO_RXQ_OVFL:
				drops = v
			}
		}
		off += unix.CmsgSpace(l - unix.CmsgLen(0))
	}
	return seg, drops
}

// tokenSize is the size of the port's interrupt token.
const tokenSize = 16

// isToken reports whether a datagram of n bytes, b its head, is an
// interrupt: the port's token.
func (r *receiver) isToken(b []byte, n int) bool {
	return n == tokenSize && len(b) >= tokenSize && [tokenSize]byte(b) == r.p.token
}
