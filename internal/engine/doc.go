// Package engine moves messages between thread endpoints: everything
// between a thread's send or receive call and the fabric.
//
// An Engine (one per process) owns the receive table, the message control
// block pool and the per-peer send and receive streams; each fabric port it
// drives has one dispatcher goroutine that receives batches of datagrams,
// validates them, reassembles fragments into message control blocks,
// matches completed messages against posted receives and acknowledges.
//
// Sending is ack-clocked: the thread that posts a message cuts and
// transmits the first window of fragments itself, and the dispatcher cuts
// more as acknowledgements open the window. Every peer has one stream of
// fragment sequence numbers; acknowledgements are cumulative with
// selective blocks above the cumulative point. Fragments are retransmitted
// after a timeout estimated from measured round trips (with exponential
// backoff) or at once when selective acknowledgements show a gap. A
// receiver without a free control block or memory budget for a new message
// answers BUSY and the sender pauses and retries: nothing is dropped and
// the receiver's memory stays within its budget.
//
// Messages from one process to another are accepted in the order they were
// first transmitted, so messages between two threads with the same tag are
// never overtaken.
//
// A thread reaches the engine through its Endpoint, which posts sends and
// receives and owns the requests its blocking calls reuse.
//
// Files, one job each: engine.go (the Engine, routes, budget, Close),
// endpoint.go and request.go (the thread's side), send.go (queueing and
// cutting fragments), transmit.go, timer.go (retransmission timeouts),
// ackin.go (acknowledgements and BUSY received), txstream.go (the send
// stream), dispatcher.go (a port's receive loop and the end of its batch),
// rxdata.go (fragments and aborts received), rxstream.go (the receive
// stream), ackout.go (acknowledgements sent), forward.go, recv.go (posted
// receives, probes), recvtable.go and mcb.go (pCoR's receive table and
// message control blocks), local.go (messages between threads of one
// process), reliable.go (the path for reliable fabrics, which leaves out
// the acknowledgements, retransmissions and body checksums above),
// relbundle.go (small messages bundled on that path),
// rndv.go (rendezvous: a large message on a port that reads remote memory
// is announced, then read by its receiver straight from the sender's
// memory). A method whose name ends in Locked runs with the lock named in
// its comment held; the lock is taken and released by its caller.
package engine
