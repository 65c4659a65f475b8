package faulty_test

import (
	"fmt"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/faulty"
	"github.com/pcor-go/pcor/fabric/mem"
)

// A port that loses a quarter of what it sends, the same quarter on every
// run with this seed.
func ExampleWrap() {
	nw := mem.NewNetwork()
	a, _ := nw.Listen("a")
	b, _ := nw.Listen("b")
	defer b.Close()
	p := faulty.Wrap(a, faulty.Faults{Seed: 1, Loss: 0.25})
	defer p.Close()

	dgs := make([]fabric.Datagram, 1000)
	for i := range dgs {
		dgs[i] = fabric.Datagram{Body: []byte{byte(i)}, To: b.LocalEndpoint()}
	}
	p.Send(dgs)
	st := p.Stats()
	fmt.Println(st.Offered, st.Dropped+st.Sent == st.Offered, st.Dropped > 200 && st.Dropped < 300)
	// Output: 1000 true true
}
