package pcor

// BudgetUsed is the number of bytes the node holds for messages not yet
// received (for tests of the receive budget).
func (n *Node) BudgetUsed() int64 { return n.eng.BudgetUsed() }
