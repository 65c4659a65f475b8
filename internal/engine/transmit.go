package engine

import "github.com/pcor-go/pcor/fabric"

// transmitRuns sends dgs, datagram i leaving from ports[i], one fabric call
// per run of datagrams on the same port.
func (e *Engine) transmitRuns(ports []*dispatcher, dgs []fabric.Datagram) {
	for i := 0; i < len(dgs); {
		j := i + 1
		for j < len(dgs) && ports[j] == ports[i] {
			j++
		}
		e.transmit(ports[i], dgs[i:j])
		i = j
	}
}

func (e *Engine) transmit(d *dispatcher, dgs []fabric.Datagram) error {
	sent, err := d.fab.Send(dgs)
	var bytes uint64
	for i := 0; i < sent; i++ {
		bytes += uint64(dgs[i].Len())
	}
	d.c.fragsSent.Add(uint64(sent))
	d.c.bytesSent.Add(bytes)
	if err != nil {
		d.c.sendErrs.Add(1)
	}
	return err
}
