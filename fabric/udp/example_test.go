//go:build linux

package udp_test

import (
	"fmt"
	"log"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/udp"
)

// Two ports on loopback exchange a batch: one sendmmsg on the way out,
// one recvmmsg (and, where the kernel offers it, one GSO/GRO buffer) on
// the way in.
func Example() {
	a, err := udp.Listen("127.0.0.1:0", udp.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := udp.Listen("127.0.0.1:0", udp.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	to, err := a.ParseEndpoint(b.LocalEndpoint().String())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("max datagram:", a.MaxDatagram(to))

	head := []byte("hdr:")
	batch := []fabric.Datagram{
		{Head: head, Body: []byte("one"), To: to},
		{Head: head, Body: []byte("two"), To: to},
		{Head: head, Body: []byte("six"), To: to},
	}
	if _, err := a.Send(batch); err != nil {
		log.Fatal(err)
	}
	msgs := make([][]byte, b.BatchSize())
	for got := 0; got < len(batch); {
		n, err := b.Receive(msgs)
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range msgs[:n] {
			fmt.Printf("%s\n", m) // valid until the next Receive
		}
		got += n
	}
	// Output:
	// max datagram: 65507
	// hdr:one
	// hdr:two
	// hdr:six
}
