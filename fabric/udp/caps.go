package udp

import "github.com/pcor-go/pcor/fabric"

// Caps: UDP datagrams may be lost, duplicated or reordered, but the UDP
// checksum protects their bytes.
func (p *Port) Caps() fabric.Caps { return fabric.Protected }
