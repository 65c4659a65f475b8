package fabric_test

import (
	"testing"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
)

func TestCaps(t *testing.T) {
	c := fabric.Reliable | fabric.Protected
	if !c.Has(fabric.Reliable) || !c.Has(fabric.Reliable|fabric.Protected) || c.Has(fabric.PeerLost) {
		t.Errorf("Has is wrong for %v", c)
	}
	if got := c.String(); got != "reliable|protected" {
		t.Errorf("String() = %q", got)
	}
	if got := fabric.Caps(0).String(); got != "none" {
		t.Errorf("String() of none = %q", got)
	}
	p, err := mem.NewNetwork().Listen("a")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if c := fabric.CapsOf(p); c != 0 {
		t.Errorf("mem port offers %v; it loses datagrams when full", c)
	}
}
