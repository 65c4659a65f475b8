package rdma

import (
	"fmt"

	"github.com/pcor-go/pcor/internal/verbs"
)

// pool is a registered region cut into fixed-size buffers with a free
// list. Its memory comes from the Go heap (which never moves objects), so
// slices handed out stay valid memory even after the port is closed and
// the region deregistered.
type pool struct {
	mr   *verbs.MR
	size int
	free []int
}

func newPool(pd *verbs.PD, n, size int, access uint32) (*pool, error) {
	mr, err := pd.RegMR(make([]byte, n*size), access)
	if err != nil {
		return nil, fmt.Errorf("rdma: registering %d buffers of %d bytes: %w", n, size, err)
	}
	p := &pool{mr: mr, size: size, free: make([]int, 0, n)}
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, i)
	}
	return p, nil
}

func (p *pool) buf(i int) []byte { return p.mr.Buf[i*p.size : (i+1)*p.size : (i+1)*p.size] }

func (p *pool) sge(i, n int) verbs.SGE { return verbs.SGEOf(p.mr, p.buf(i)[:n]) }

// get takes a free buffer; ok is false when none is left.
func (p *pool) get() (int, bool) {
	if len(p.free) == 0 {
		return 0, false
	}
	i := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return i, true
}

func (p *pool) put(i int) { p.free = append(p.free, i) }
