package hws_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/hws"
	"github.com/pcor-go/pcor/routing"
)

// Two networks joined by a gateway process: the processes behind the
// gateway are another group, with its own master.
func ExampleDiscover() {
	port := func(network, addr string) directory.PortInfo {
		return directory.PortInfo{Fabric: "udp", Network: network, Addr: addr}
	}
	members := []directory.Member{
		{Proc: 0, Ports: []directory.PortInfo{port("lanA", "10.0.1.1:7000")}},
		{Proc: 1, Ports: []directory.PortInfo{port("lanA", "10.0.1.2:7000")}},
		{Proc: 2, Ports: []directory.PortInfo{port("lanA", "10.0.1.3:7000"), port("lanB", "10.0.2.3:7000")}},
		{Proc: 3, Ports: []directory.PortInfo{port("lanB", "10.0.2.4:7000")}},
		{Proc: 4, Ports: []directory.PortInfo{port("lanB", "10.0.2.5:7000")}},
	}
	g := hws.Discover(members, routing.DefaultModel())
	fmt.Println(g, g.Masters())
	fmt.Println(g.Without(0).Masters()) // process 0 died
	// Output:
	// 0-2;3-4 [0 3]
	// [1 3]
}

// Under hws a member asks only inside its group; a master asks another
// master for a global task.
func ExamplePolicy_Next() {
	g := hws.Uniform(2, 3) // 0-2;3-5
	p := hws.Policy{Kind: hws.HWS}
	r := rand.New(rand.NewPCG(1, 1))
	s, _ := p.Next(g, hws.Thief{Proc: 1}, r)
	fmt.Println(s.Wide, g.Same(s.Victim, 1))
	s, _ = p.Next(g, hws.Thief{Proc: 3}, r)
	fmt.Println(s.Victim, s.Wide, s.Async, s.From)
	// Output:
	// false true
	// 0 true true global
}
