package engine

import (
	"sync/atomic"
	"testing"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
)

// keyedPort is a port that connects with a handshake of its own and so
// wants the job key (fabric.JobKeyed).
type keyedPort struct {
	fabric.Port
	key atomic.Uint64
}

func (p *keyedPort) SetJobKey(k uint64) { p.key.Store(k) }

// TestAddPortGivesJobKey: a port that refuses peers of other jobs learns
// the engine's key as soon as the engine adopts it, before any traffic.
func TestAddPortGivesJobKey(t *testing.T) {
	m, err := mem.NewNetwork().Listen("a")
	if err != nil {
		t.Fatal(err)
	}
	p := &keyedPort{Port: m}
	e, err := New(Config{Proc: 3, JobKey: 0xc0ffee})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.AddPort(p, Blocking); err != nil {
		t.Fatal(err)
	}
	if k := p.key.Load(); k != 0xc0ffee {
		t.Fatalf("port's job key %#x, want %#x", k, 0xc0ffee)
	}
}
