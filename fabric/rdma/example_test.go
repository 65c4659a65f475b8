package rdma_test

import (
	"errors"
	"fmt"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/rdma"
)

// A port is opened on the first soft-RoCE device; its endpoint is the
// address of its handshake listener, which peers pass to ParseEndpoint.
func ExampleListen() {
	p, err := rdma.Listen(rdma.Config{Addr: "127.0.0.1:0"})
	if errors.Is(err, rdma.ErrNoDevice) {
		fmt.Println("no RDMA device")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	peer, _ := p.ParseEndpoint("127.0.0.1:7471")
	// Bodies in memory from Alloc are sent without a copy.
	body := p.Alloc(4096)
	p.Send([]fabric.Datagram{{Head: []byte("hdr"), Body: body, To: peer}})
	msgs := make([][]byte, p.BatchSize())
	n, _ := p.Poll(msgs)
	fmt.Println(n >= 0)
}
