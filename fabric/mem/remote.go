package mem

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pcor-go/pcor/fabric"
)

// Remote memory: on a Network with RemoteMemory set, a port lends the
// memory it exposes to the other ports of the network, which copy from it
// as an RDMA READ would read it (everything lives in one process).

var _ fabric.RemoteReader = (*Port)(nil)

// Caps is fabric.RemoteMemory on a network that offers it, else none.
func (p *Port) Caps() fabric.Caps {
	if p.remote {
		return fabric.RemoteMemory
	}
	return 0
}

// ErrNotExposed is the error of a read of memory that is not (or no
// longer) exposed, or of a port that is gone.
var ErrNotExposed = errors.New("mem: remote memory not exposed")

// Expose lends b to the network's ports until release.
func (p *Port) Expose(b []byte) ([]byte, func(), error) {
	select {
	case <-p.done:
		return nil, nil, fabric.ErrClosed
	default:
	}
	p.xmu.Lock()
	if p.exposed == nil {
		p.exposed = map[uint64][]byte{}
	}
	p.xnext++
	id := p.xnext
	p.exposed[id] = b
	p.xmu.Unlock()
	desc := binary.LittleEndian.AppendUint64(nil, id)
	return desc, func() {
		p.xmu.Lock()
		delete(p.exposed, id)
		p.xmu.Unlock()
	}, nil
}

// ReadRemote copies the memory port from exposed as desc into dst, from a
// goroutine that then calls done.
func (p *Port) ReadRemote(from fabric.Endpoint, dst []byte, desc []byte, done func(error)) error {
	ep, ok := from.(Endpoint)
	if !ok || len(desc) != 8 {
		return fmt.Errorf("mem: bad remote read from %v", from)
	}
	id := binary.LittleEndian.Uint64(desc)
	go func() {
		src := p.net.lookup(ep)
		if src == nil {
			done(fmt.Errorf("%w: port %s gone", ErrNotExposed, ep))
			return
		}
		src.xmu.Lock()
		b, ok := src.exposed[id]
		if ok && len(b) >= len(dst) {
			copy(dst, b)
		}
		src.xmu.Unlock()
		switch {
		case !ok:
			done(ErrNotExposed)
		case len(b) < len(dst):
			done(fmt.Errorf("mem: %d bytes exposed, %d read", len(b), len(dst)))
		default:
			done(nil)
		}
	}()
	return nil
}
