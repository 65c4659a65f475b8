package pcor

import "github.com/pcor-go/pcor/internal/engine"

// BudgetUsed is the number of bytes the node holds for messages not yet
// received (for tests of the receive budget).
func (n *Node) BudgetUsed() int64 { return n.eng.BudgetUsed() }

// The modes are the engine's, by number.
var _ = [1]struct{}{}[int(Blocking)-int(engine.Blocking)]
var _ = [1]struct{}{}[int(Polling)-int(engine.Polling)]

// RendezvousStats counts the node's messages moved by rendezvous.
func (n *Node) RendezvousStats() engine.RendezvousStats { return n.eng.RendezvousStats() }
