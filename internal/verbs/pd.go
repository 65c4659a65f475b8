package verbs

import (
	"sync"
	"unsafe"
)

// PD is a protection domain.
type PD struct {
	ctx    *Context
	handle uint32
	once   sync.Once
	err    error
}

// AllocPD creates a protection domain (ALLOC_PD).
func (c *Context) AllocPD() (*PD, error) {
	var req respOnly
	resp := make([]byte, 8)
	if err := c.write("ALLOC_PD", cmdAllocPD, bytesOf(&req), resp); err != nil {
		return nil, err
	}
	return &PD{ctx: c, handle: (*allocPDResp)(unsafe.Pointer(&resp[0])).PDHandle}, nil
}

// Close deallocates the protection domain (DEALLOC_PD). It is idempotent.
func (pd *PD) Close() error {
	pd.once.Do(func() {
		req := handleCmd{Handle: pd.handle}
		pd.err = pd.ctx.write("DEALLOC_PD", cmdDeallocPD, bytesOf(&req), nil)
	})
	return pd.err
}
