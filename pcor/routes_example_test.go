package pcor_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/pcor-go/pcor/fabric/mem"
	"github.com/pcor-go/pcor/pcor"
)

// Three processes on two networks: 0 and 1 share "left", 1 and 2 share
// "right". Process 0 reaches 2 through the gateway 1.
func ExampleNode_Routes() {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the directory
	if err != nil {
		fmt.Println(err)
		return
	}
	coord := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	left, right := mem.NewNetwork(), mem.NewNetwork()
	var nodes []*pcor.Node
	defer func() {
		// Process 0 serves the directory, whose Close waits until the
		// other members have left: close it last.
		for i := len(nodes) - 1; i >= 0; i-- {
			nodes[i].Close()
		}
	}()
	// Process 1 has a port on each network.
	for rank, networks := range [][]string{{"left"}, {"left", "right"}, {"right"}} {
		var ports []pcor.Listen
		for _, nw := range networks {
			fab := left
			if nw == "right" {
				fab = right
			}
			p, err := fab.Listen(fmt.Sprintf("p%d", rank))
			if err != nil {
				fmt.Println(err)
				return
			}
			ports = append(ports, pcor.Listen{Port: p, Network: nw})
		}
		n, err := pcor.Join(ctx, pcor.JoinConfig{Coord: coord, JobKey: 1, Rank: rank, Size: 3, Listen: ports})
		if err != nil {
			fmt.Println(err)
			return
		}
		nodes = append(nodes, n)
	}
	n0 := nodes[0]
	n0.Directory().Wait(ctx, 3)

	n0.Routes().Format(os.Stdout)
	// Output:
	// DST  SIZE  PORT  FABRIC  NETWORK  NEXT  ADDR  HOPS  LATENCY  BANDWIDTH  PATH
	// 1    0-    0     mem     left     1     p1    1     1µs      10 GB/s    0>1
	// 2    0-    0     mem     left     1     p1    2     12µs     10 GB/s    0>1>2
}
