package main

import (
	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/rdma"
	"github.com/pcor-go/pcor/pcor"
)

// The RDMA fabric is opened with its handshake listener at the port's
// address; on a host without an RDMA device opening fails with
// rdma.ErrNoDevice, which --fabric rdma reports.
func init() {
	pcor.RegisterFabric("rdma", func(addr string) (fabric.Port, error) {
		return rdma.Listen(rdma.Config{Addr: addr})
	})
}
