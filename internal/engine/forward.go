package engine

import (
	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/wire"
)

// forward passes on a datagram whose final destination is another
// process, fragment by fragment, along this process's route to it. The
// datagram leaves unchanged but for its hop count, and for its checksum
// when its body was not summed (it came over a fabric that protects it)
// and the next fabric does not protect it.
func (d *dispatcher) forward(h *wire.Header, pkt []byte) {
	e := d.e
	if h.Hops == 0 {
		d.c.drops[DropMisrouted].Add(1)
		return
	}
	q := e.peer(ProcID(h.DstProc))
	if q == nil {
		d.c.drops[DropNoRoute].Add(1)
		return
	}
	rs := q.fwd.Load()
	if rs == nil {
		rs = q.routes.Load()
	}
	if rs == nil {
		d.c.drops[DropNoRoute].Add(1)
		return
	}
	rt := rs.pick(int64(h.Total))
	if h.Kind != wire.Data {
		rt = (*rs)[0]
	}
	if len(pkt) > rt.maxDg {
		d.c.drops[DropTooBig].Add(1)
		return
	}
	if h.Flags&wire.FlagBodyUnsummed != 0 && !rt.disp.protected {
		wire.Reseal(pkt) // the next fabric does not protect the body
	}
	wire.SetHops(pkt, h.Hops-1)
	d.fwd = append(d.fwd, fabric.Datagram{Head: pkt, To: rt.ep})
	d.fwdPorts = append(d.fwdPorts, rt.disp)
	d.c.forwarded.Add(1)
}

// flushForward sends the datagrams forwarded during a batch.
func (d *dispatcher) flushForward() {
	d.e.transmitRuns(d.fwdPorts, d.fwd)
	clear(d.fwd)
	d.fwd = d.fwd[:0]
	clear(d.fwdPorts)
	d.fwdPorts = d.fwdPorts[:0]
}
