package athread

import (
	"testing"

	"github.com/pcor-go/pcor/pcor"
)

// Random asks a process that does not hold the thief as hungry already,
// any of them when they all do, and spreads its choices over them.
func TestRandomSkipsHeld(t *testing.T) {
	var r Random
	procs := []pcor.ProcID{0, 1, 2, 3}
	got := map[pcor.ProcID]int{}
	for i := 0; i < 300; i++ {
		v, ok := r.Victim(StealQuery{Self: 1, Thief: 1, Procs: procs, Held: []pcor.ProcID{0, 3}})
		if !ok || v != 2 {
			t.Fatalf("held by 0 and 3: asked %d (%v)", v, ok)
		}
		v, ok = r.Victim(StealQuery{Self: 1, Thief: 1, Procs: procs, Held: []pcor.ProcID{2}})
		if !ok || v == 1 || v == 2 {
			t.Fatalf("held by 2: asked %d (%v)", v, ok)
		}
		got[v]++
		v, ok = r.Victim(StealQuery{Self: 1, Thief: 1, Procs: procs, Held: []pcor.ProcID{0, 2, 3}})
		if !ok || v == 1 {
			t.Fatalf("held by all: asked %d (%v)", v, ok)
		}
	}
	if got[0] < 100 || got[3] < 100 {
		t.Fatalf("choices not spread: %v", got)
	}
	if _, ok := r.Victim(StealQuery{Self: 0, Procs: []pcor.ProcID{0}}); ok {
		t.Fatal("a process alone asked someone")
	}
}
