package engine

import (
	"testing"

	"github.com/pcor-go/pcor/fabric/mem"
)

// peer finds every peer set, by the index below peerIdxMax and by the map
// above it, and none once removed or never set.
func TestPeerIndex(t *testing.T) {
	n := mem.NewNetwork()
	a, _ := n.Listen("a")
	b, _ := n.Listen("b")
	e, err := New(Config{Proc: 0, JobKey: 0xfeed})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.AddPort(a, Blocking); err != nil {
		t.Fatal(err)
	}
	procs := []ProcID{3, 1, peerIdxMax - 1, peerIdxMax, 1 << 20}
	for _, p := range procs {
		if err := e.SetPeer(p, 0, b.LocalEndpoint().String()); err != nil {
			t.Fatal(err)
		}
	}
	check := func(gone ProcID) {
		t.Helper()
		m := *e.peers.Load()
		for _, p := range append(procs, 2, 5, peerIdxMax+1, AnyProc) {
			got, want := e.peer(p), m[p]
			if got != want {
				t.Fatalf("peer(%d) = %p, the map has %p", p, got, want)
			}
			if (want == nil) != (p == gone || p == 2 || p == 5 || p == peerIdxMax+1 || p == AnyProc) {
				t.Fatalf("peer(%d) = %p", p, want)
			}
		}
	}
	check(2)
	for _, p := range []ProcID{3, peerIdxMax - 1, 1 << 20} {
		e.RemovePeer(p, nil)
		check(p)
		if err := e.SetPeer(p, 0, b.LocalEndpoint().String()); err != nil {
			t.Fatal(err)
		}
		check(2)
	}
}
