package verbs

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Command transport: legacy write() commands and the RDMA_VERBS_IOCTL
// method call. Buffers whose addresses travel inside a command (response
// pointers, ioctl attribute data) are pinned for the call so the runtime
// neither moves nor frees them while the kernel writes to them.

// CmdError is a failed uverbs command; it wraps the errno.
type CmdError struct {
	Op  string
	Err error
}

func (e *CmdError) Error() string { return "rdma: " + e.Op + ": " + e.Err.Error() }
func (e *CmdError) Unwrap() error { return e.Err }

// encodeWrite lays out a legacy write command: the header then the
// request. in_words counts the whole request including the header,
// out_words the response buffer, both in 4-byte words.
func encodeWrite(cmd uint32, req []byte, respLen int) ([]byte, error) {
	total := 8 + len(req)
	if total%4 != 0 || respLen%4 != 0 || total/4 > 0xffff || respLen/4 > 0xffff {
		return nil, fmt.Errorf("rdma: command %d: bad sizes %d/%d", cmd, total, respLen)
	}
	buf := make([]byte, total)
	h := (*cmdHdr)(unsafe.Pointer(&buf[0]))
	h.Command = cmd
	h.InWords = uint16(total / 4)
	h.OutWords = uint16(respLen / 4)
	copy(buf[8:], req)
	return buf, nil
}

// bytesOf views a value as its bytes (for the fixed-layout structs above).
func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// writeCmd issues a write command. req is the command struct; when resp is
// non-nil, the request's first 8 bytes must be the response pointer, which
// writeCmd fills in.
func writeCmd(fd int, op string, cmd uint32, req []byte, resp []byte) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	if len(resp) > 0 {
		if len(req) < 8 {
			return fmt.Errorf("rdma: %s: request has no response field", op)
		}
		pin.Pin(&resp[0])
		*(*uint64)(unsafe.Pointer(&req[0])) = uint64(uintptr(unsafe.Pointer(&resp[0])))
	}
	buf, err := encodeWrite(cmd, req, len(resp))
	if err != nil {
		return err
	}
	for {
		var n int
		var err error
		if cmd == cmdPostSend {
			n, err = rawWrite(fd, buf)
		} else {
			n, err = unix.Write(fd, buf)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &CmdError{Op: op, Err: err}
		}
		if n != len(buf) {
			return &CmdError{Op: op, Err: fmt.Errorf("short write %d of %d", n, len(buf))}
		}
		return nil
	}
}

// rawWrite is write(2) without the runtime's system-call bookkeeping, for
// the doorbell (an empty POST_SEND): the kernel runs the send path there
// and returns without waiting for anything, but under emulation that can
// take a few hundred microseconds, long enough for the runtime to take
// the processor away from a goroutine in an ordinary system call and
// wake another thread to run it, a context switch or two per message.
func rawWrite(fd int, buf []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(len(buf)))
	if e != 0 {
		return int(n), e
	}
	return int(n), nil
}

// ioctlCall is one RDMA_VERBS_IOCTL method invocation being built.
type ioctlCall struct {
	hdr   ioctlHdr
	attrs []ioctlAttr
	pin   runtime.Pinner
}

func newIoctl(object, method uint16, driverID uint32) *ioctlCall {
	return &ioctlCall{hdr: ioctlHdr{ObjectID: object, MethodID: method, DriverID: driverID}}
}

// constIn adds a const attribute (inline, always 8 bytes).
func (c *ioctlCall) constIn(id uint16, v uint64) {
	c.attrs = append(c.attrs, ioctlAttr{AttrID: id, Len: 8, Flags: attrFMandatory, Data: v})
}

// ptrOut adds an output buffer attribute.
func (c *ioctlCall) ptrOut(id uint16, buf []byte) {
	c.pin.Pin(&buf[0])
	c.attrs = append(c.attrs, ioctlAttr{AttrID: id, Len: uint16(len(buf)), Flags: attrFMandatory,
		Data: uint64(uintptr(unsafe.Pointer(&buf[0])))})
}

// encode returns the header and attributes as one buffer.
func (c *ioctlCall) encode() []byte {
	c.hdr.NumAttrs = uint16(len(c.attrs))
	c.hdr.Length = uint16(unsafe.Sizeof(c.hdr)) + uint16(len(c.attrs))*uint16(unsafe.Sizeof(ioctlAttr{}))
	buf := make([]byte, 0, c.hdr.Length)
	buf = append(buf, bytesOf(&c.hdr)...)
	for i := range c.attrs {
		buf = append(buf, bytesOf(&c.attrs[i])...)
	}
	return buf
}

func (c *ioctlCall) do(fd int, op string) error {
	defer c.pin.Unpin()
	buf := c.encode()
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), rdmaVerbsIoctl, uintptr(unsafe.Pointer(&buf[0])))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return &CmdError{Op: op, Err: e}
		}
		return nil
	}
}
