package verbs

import (
	"fmt"
	"net"
	"sync"
	"unsafe"

	"github.com/pcor-go/pcor/fabric"
	"golang.org/x/sys/unix"
)

// Context is an open uverbs device with its user context (GET_CONTEXT).
// Every verbs object is created through a Context; Close releases the
// context and its file descriptors once its objects are closed.
type Context struct {
	Dev      DeviceInfo
	fd       int
	asyncFD  int
	driverID uint32

	mu     sync.RWMutex // held for reading by every command, for writing by Close
	closed bool
}

// write issues a write command on the context; after Close it returns
// fabric.ErrClosed instead of touching a file descriptor number that may
// have been reused.
func (c *Context) write(op string, cmd uint32, req, resp []byte) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return &CmdError{Op: op, Err: fabric.ErrClosed}
	}
	return writeCmd(c.fd, op, cmd, req, resp)
}

func (c *Context) ioctl(call *ioctlCall, op string) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		call.pin.Unpin()
		return &CmdError{Op: op, Err: fabric.ErrClosed}
	}
	return call.do(c.fd, op)
}

func (c *Context) mapRing(mi mmInfo) (*ring, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return nil, fabric.ErrClosed
	}
	return mapRing(c.fd, mi)
}

// Open opens the device's uverbs character device and creates a user
// context. The device must be supported (rxe).
func Open(dev DeviceInfo) (*Context, error) {
	if err := dev.Supported(); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dev.DevPath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("rdma: open %s: %w", dev.DevPath, err)
	}
	c := &Context{Dev: dev, fd: fd, asyncFD: -1, driverID: dev.DriverID}
	var req respOnly
	resp := make([]byte, 16) // core response plus room for provider data
	if err := writeCmd(fd, "GET_CONTEXT", cmdGetContext, bytesOf(&req), resp); err != nil {
		unix.Close(fd)
		return nil, err
	}
	r := (*getContextResp)(unsafe.Pointer(&resp[0]))
	c.asyncFD = int(r.AsyncFD)
	unix.CloseOnExec(c.asyncFD)
	return c, nil
}

// Close releases the context. It is idempotent.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.asyncFD >= 0 {
		unix.Close(c.asyncFD)
	}
	return unix.Close(c.fd)
}

// DeviceAttr is the subset of the device attributes this package uses.
type DeviceAttr struct {
	MaxQP, MaxQPWr, MaxSGE, MaxCQ, MaxCQE, MaxMR uint32
	MaxMRSize                                    uint64
	PhysPortCnt                                  uint8
	VendorID, VendorPartID                       uint32
}

// QueryDevice returns the device attributes (QUERY_DEVICE).
func (c *Context) QueryDevice() (DeviceAttr, error) {
	var req respOnly
	resp := make([]byte, unsafe.Sizeof(queryDeviceResp{}))
	if err := c.write("QUERY_DEVICE", cmdQueryDevice, bytesOf(&req), resp); err != nil {
		return DeviceAttr{}, err
	}
	r := (*queryDeviceResp)(unsafe.Pointer(&resp[0]))
	return DeviceAttr{MaxQP: r.MaxQP, MaxQPWr: r.MaxQPWr, MaxSGE: r.MaxSGE, MaxCQ: r.MaxCQ,
		MaxCQE: r.MaxCQE, MaxMR: r.MaxMR, MaxMRSize: r.MaxMRSize, PhysPortCnt: r.PhysPortCnt,
		VendorID: r.VendorID, VendorPartID: r.VendorPartID}, nil
}

// PortAttr is the subset of a port's attributes this package uses.
type PortAttr struct {
	State     uint8 // 4 = ACTIVE
	MaxMTU    uint8 // enum ib_mtu
	ActiveMTU uint8
	GIDTblLen uint32
	LinkLayer uint8 // 1 = InfiniBand, 2 = Ethernet
	MaxMsgSz  uint32
}

// QueryPort returns a port's attributes (UVERBS_METHOD_QUERY_PORT).
func (c *Context) QueryPort(port uint8) (PortAttr, error) {
	resp := make([]byte, unsafe.Sizeof(queryPortResp{}))
	call := newIoctl(objectDevice, methodQueryPort, c.driverID)
	call.constIn(attrQueryPortPortNum, uint64(port))
	call.ptrOut(attrQueryPortResp, resp)
	if err := c.ioctl(call, "QUERY_PORT"); err != nil {
		return PortAttr{}, err
	}
	r := (*queryPortResp)(unsafe.Pointer(&resp[0]))
	return PortAttr{State: r.State, MaxMTU: r.MaxMTU, ActiveMTU: r.ActiveMTU, GIDTblLen: r.GIDTblLen,
		LinkLayer: r.LinkLayer, MaxMsgSz: r.MaxMsgSz}, nil
}

// GID is a 16-byte global identifier.
type GID [16]byte

// String formats the GID as an IPv6 address.
func (g GID) String() string { return net.IP(g[:]).String() }

// IsZero reports an unused entry.
func (g GID) IsZero() bool { return g == GID{} }

// GIDEntry is one entry of a port's GID table.
type GIDEntry struct {
	GID     GID
	Index   uint32
	Port    uint32
	Type    uint32 // 0 IB, 1 RoCEv1, 2 RoCEv2
	Ifindex uint32
}

// IsRoCEv2IPv4 reports a RoCEv2 GID that is an IPv4-mapped address.
func (e GIDEntry) IsRoCEv2IPv4() bool {
	return e.Type == gidTypeRoCEv2 && net.IP(e.GID[:]).To4() != nil
}

// QueryGIDTable returns the valid GID entries of all ports
// (UVERBS_METHOD_QUERY_GID_TABLE), at most max of them.
func (c *Context) QueryGIDTable(max int) ([]GIDEntry, error) {
	if max <= 0 {
		return nil, fmt.Errorf("rdma: QueryGIDTable: max %d", max)
	}
	esz := int(unsafe.Sizeof(gidEntry{}))
	buf := make([]byte, max*esz)
	num := make([]byte, 8)
	call := newIoctl(objectDevice, methodQueryGIDTable, c.driverID)
	call.constIn(attrGIDTableEntrySize, uint64(esz))
	call.ptrOut(attrGIDTableRespEntries, buf)
	call.ptrOut(attrGIDTableRespNumEntries, num)
	if err := c.ioctl(call, "QUERY_GID_TABLE"); err != nil {
		return nil, err
	}
	n := int(*(*uint64)(unsafe.Pointer(&num[0])))
	if n > max {
		n = max
	}
	out := make([]GIDEntry, 0, n)
	for i := 0; i < n; i++ {
		e := (*gidEntry)(unsafe.Pointer(&buf[i*esz]))
		out = append(out, GIDEntry{GID: GID(e.GID), Index: e.GIDIndex, Port: e.PortNum, Type: e.GIDType, Ifindex: e.NetdevIfindex})
	}
	return out, nil
}
