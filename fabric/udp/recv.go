//go:build linux

package udp

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric"
)

// RecvBufferSize is the size of each receive buffer: room for the largest
// UDP datagram or GRO-coalesced run.
const RecvBufferSize = 1 << 16

// groCmsgSpace is the room of one UDP_GRO control message (an int).
var groCmsgSpace = unix.CmsgSpace(4)

// receiver owns the receive buffers and recvmmsg arrays of a port. The
// datagrams of one recvmmsg call (after GRO buffers are split) wait in segs
// until the caller has taken them all; only then are the buffers reused.
type receiver struct {
	p    *Port
	hdrs []unix.Mmsghdr
	iovs []unix.Iovec
	buf  []byte
	ctrl []byte
	segs [][]byte
	next int

	count int
	n     int
	errno unix.Errno
	block bool
	rdFn  func(uintptr) bool
	ctlFn func(uintptr)
}

func newReceiver(p *Port) *receiver {
	b := p.cfg.BatchSize
	r := &receiver{
		p:    p,
		hdrs: make([]unix.Mmsghdr, b),
		iovs: make([]unix.Iovec, b),
		buf:  make([]byte, b*RecvBufferSize),
		ctrl: make([]byte, b*groCmsgSpace),
		segs: make([][]byte, 0, b*maxGSOSegments),
	}
	for i := range r.hdrs {
		r.iovs[i].Base = &r.buf[i*RecvBufferSize]
		r.iovs[i].SetLen(RecvBufferSize)
		h := &r.hdrs[i].Hdr
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		if p.gro {
			h.Control = &r.ctrl[i*groCmsgSpace]
		}
	}
	r.rdFn = r.attempt
	r.ctlFn = func(fd uintptr) { r.attempt(fd) }
	return r
}

// Receive blocks until at least one datagram has arrived and stores up to
// len(msgs) of them in msgs. The slices alias the port's buffers and stay
// valid until the next Receive or Poll. GRO-coalesced buffers come back as
// the separate datagrams they were sent as. After Close it returns
// fabric.ErrClosed; after the deadline set by SetReceiveDeadline, an error
// satisfying errors.Is(err, os.ErrDeadlineExceeded).
func (p *Port) Receive(msgs [][]byte) (int, error) { return p.receive(msgs, true) }

// Poll is Receive that never blocks: it returns 0 when nothing waits.
func (p *Port) Poll(msgs [][]byte) (int, error) { return p.receive(msgs, false) }

func (p *Port) receive(msgs [][]byte, block bool) (int, error) {
	if p.closed.Load() {
		return 0, fabric.ErrClosed
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	p.recvMu.Lock()
	defer p.recvMu.Unlock()
	r := p.rx
	for {
		if r.next < len(r.segs) {
			n := copy(msgs, r.segs[r.next:])
			r.next += n
			p.st.recvDatagrams.Add(uint64(n))
			return n, nil
		}
		got, err := r.fill(min(len(msgs), len(r.hdrs)), block)
		if err != nil {
			return 0, p.mapErr(err)
		}
		if got == 0 && !block {
			return 0, nil
		}
		// Every buffer may have been dropped as truncated: a blocking
		// Receive then waits again, a Poll looks once more and gives up.
		if len(r.segs) == 0 && !block {
			return 0, nil
		}
	}
}

// fill runs one recvmmsg for up to count buffers (through the poller when
// block is set) and splits what arrived into r.segs.
func (r *receiver) fill(count int, block bool) (int, error) {
	r.segs, r.next = r.segs[:0], 0
	ctl := 0
	if r.p.gro {
		ctl = groCmsgSpace
	}
	for i := range r.hdrs[:count] {
		r.hdrs[i].Hdr.SetControllen(ctl)
		r.hdrs[i].Hdr.Flags = 0
	}
	r.count, r.n, r.errno, r.block = count, 0, 0, block
	var err error
	if block {
		err = r.p.rc.Read(r.rdFn)
	} else {
		err = r.p.rc.Control(r.ctlFn)
	}
	if err != nil {
		return 0, err
	}
	if r.errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", r.errno)
	}
	if r.n > 0 {
		r.p.st.recvCalls.Add(1)
		r.split(r.n)
	}
	return r.n, nil
}

// attempt runs recvmmsg; false asks the poller to wait for readability.
func (r *receiver) attempt(fd uintptr) bool {
	for {
		n, e := recvmmsg(fd, r.hdrs[:r.count])
		switch e {
		case 0:
			r.n = n
			return true
		case unix.EAGAIN:
			return !r.block
		case unix.EINTR, unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH:
			// Interrupted, or an ICMP error reported on the socket
			// (reading it clears it): look again.
		default:
			r.errno = e
			return true
		}
	}
}

// split turns the n filled buffers into datagrams, cutting GRO buffers at
// their segment size.
func (r *receiver) split(n int) {
	var trunc, gro uint64
	for i := range r.hdrs[:n] {
		h := &r.hdrs[i]
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			trunc++
			continue
		}
		off := i * RecvBufferSize
		buf := r.buf[off : off+int(h.Len) : off+int(h.Len)]
		seg := 0
		if r.p.gro {
			seg = r.groSize(i, int(h.Hdr.Controllen))
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

// groSize returns the segment size from buffer i's UDP_GRO control
// message, or 0 when there is none.
func (r *receiver) groSize(i, clen int) int {
	ctrl := r.ctrl[i*groCmsgSpace:]
	clen = min(clen, groCmsgSpace)
	for off := 0; off+unix.SizeofCmsghdr <= clen; {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&ctrl[off]))
		l := int(c.Len)
		if l < unix.SizeofCmsghdr || off+l > clen {
			return 0
		}
		if c.Level == unix.IPPROTO_UDP && c.Type == unix.UDP_GRO && l >= unix.CmsgLen(4) {
			return int(*(*int32)(unsafe.Pointer(&ctrl[off+unix.CmsgLen(0)])))
		}
		off += unix.CmsgSpace(l - unix.CmsgLen(0))
	}
	return 0
}
