package routing

import (
	"fmt"
	"time"

	"github.com/pcor-go/pcor/directory"
)

func port(fabric, network string, lat time.Duration, bw float64) directory.PortInfo {
	return directory.PortInfo{Fabric: fabric, Network: network, Latency: lat, Bandwidth: bw}
}

// member gives each port the address "<proc>@<network>#<index>".
func member(proc uint32, ports ...directory.PortInfo) directory.Member {
	for i := range ports {
		ports[i].Addr = fmt.Sprintf("%d@%s#%d", proc, ports[i].Network, i)
	}
	return directory.Member{Proc: proc, Ports: ports}
}

func udp(network string) directory.PortInfo { return port("udp", network, 0, 0) }

func without(ms []directory.Member, proc uint32) []directory.Member {
	var out []directory.Member
	for _, m := range ms {
		if m.Proc != proc {
			out = append(out, m)
		}
	}
	return out
}
