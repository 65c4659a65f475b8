package rdma_test

import (
	"errors"
	"fmt"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/rdma"
)

// A port is opened on the first soft-RoCE device; its endpoint, "IP:QPN",
// is the address of its connection-manager queue pair, which peers pass
// to ParseEndpoint (a pcor node publishes it in the directory).
func ExampleListen() {
	p, err := rdma.Listen(rdma.Config{})
	if errors.Is(err, rdma.ErrNoDevice) {
		fmt.Println("no RDMA device")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	peer, _ := p.ParseEndpoint("10.0.2.15:17")
	// Bodies in memory from Alloc are sent without a copy.
	body := p.Alloc(4096)
	p.Send([]fabric.Datagram{{Head: []byte("hdr"), Body: body, To: peer}})
	msgs := make([][]byte, p.BatchSize())
	n, _ := p.Poll(msgs)
	fmt.Println(n >= 0)
}
