package rdma

import (
	"fmt"

	"github.com/pcor-go/pcor/internal/verbs"
)

// pool is registered memory cut into fixed-size buffers with a free
// list: a first region of the initial buffers, then any number of
// regions of chunk buffers each, added by grow. Its memory comes from the
// Go heap (which never moves objects), so slices handed out stay valid
// memory even after the port is closed and the regions deregistered.
type pool struct {
	mrs   []*verbs.MR
	first int // buffers in mrs[0]
	chunk int // buffers in each later region
	size  int
	n     int // buffers in all
	free  []int
}

func newPool(pd *verbs.PD, n, size int, access uint32) (*pool, error) {
	mr, err := pd.RegMR(make([]byte, n*size), access)
	if err != nil {
		return nil, fmt.Errorf("rdma: registering %d buffers of %d bytes: %w", n, size, err)
	}
	p := &pool{mrs: []*verbs.MR{mr}, first: n, size: size, n: n, free: make([]int, 0, n)}
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, i)
	}
	return p, nil
}

// grow registers one more region of chunk buffers (the first call fixes
// chunk) and adds them to the free list.
func (p *pool) grow(pd *verbs.PD, chunk int, access uint32) error {
	if p.chunk == 0 {
		p.chunk = chunk
	}
	mr, err := pd.RegMR(make([]byte, p.chunk*p.size), access)
	if err != nil {
		return fmt.Errorf("rdma: registering %d more buffers of %d bytes: %w", p.chunk, p.size, err)
	}
	p.mrs = append(p.mrs, mr)
	for i := p.n + p.chunk - 1; i >= p.n; i-- {
		p.free = append(p.free, i)
	}
	p.n += p.chunk
	return nil
}

// at returns the region holding buffer i and the buffer's offset in it.
func (p *pool) at(i int) (*verbs.MR, int) {
	if i < p.first {
		return p.mrs[0], i * p.size
	}
	j := i - p.first
	return p.mrs[1+j/p.chunk], (j % p.chunk) * p.size
}

func (p *pool) buf(i int) []byte {
	mr, off := p.at(i)
	return mr.Buf[off : off+p.size : off+p.size]
}

func (p *pool) sge(i, n int) verbs.SGE {
	mr, off := p.at(i)
	return verbs.SGEOf(mr, mr.Buf[off:off+n])
}

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

// close deregisters every region.
func (p *pool) close() {
	for _, mr := range p.mrs {
		mr.Close()
	}
}
