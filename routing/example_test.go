package routing_test

import (
	"fmt"
	"os"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/routing"
)

// Process 1 reaches process 2 over two networks, and process 3 only
// through the gateway 2.
func ExampleBuild() {
	eth := func(addr string) directory.PortInfo {
		return directory.PortInfo{Fabric: "udp", Network: "eth", Addr: addr, Latency: 20 * time.Microsecond, Bandwidth: 100e6}
	}
	ib := func(addr string) directory.PortInfo {
		return directory.PortInfo{Fabric: "rdma", Network: "ib", Addr: addr, Latency: 100 * time.Microsecond, Bandwidth: 10e9}
	}
	members := []directory.Member{
		{Proc: 1, Ports: []directory.PortInfo{eth("10.0.0.1:7000"), ib("ib-1")}},
		{Proc: 2, Ports: []directory.PortInfo{eth("10.0.0.2:7000"), ib("ib-2"),
			{Fabric: "udp", Network: "lab", Addr: "192.168.9.2:7000"}}},
		{Proc: 3, Ports: []directory.PortInfo{{Fabric: "udp", Network: "lab", Addr: "192.168.9.3:7000"}}},
	}
	t := routing.Build(1, members)
	t.Format(os.Stdout)

	small, _ := t.Lookup(2, 1000)
	large, _ := t.Lookup(2, 1<<20)
	fmt.Println(small.Network, large.Network)
	// Output:
	// DST  SIZE    PORT  FABRIC  NETWORK  NEXT  ADDR           HOPS  LATENCY  BANDWIDTH  PATH
	// 2    0-8080  0     udp     eth      2     10.0.0.2:7000  1     20µs     100 MB/s   1>2
	// 2    8081-   1     rdma    ib       2     ib-2           1     100µs    10 GB/s    1>2
	// 3    0-8888  0     udp     eth      2     10.0.0.2:7000  2     80µs     100 MB/s   1>2>3
	// 3    8889-   1     rdma    ib       2     ib-2           2     160µs    1 GB/s     1>2>3
	// eth ib
}
