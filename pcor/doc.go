// Package pcor is the public API of pcor-go: thread-to-thread message
// passing across the processes of a cluster.
//
// A process creates one Node. A goroutine that wants to communicate owns a
// Thread endpoint made by the Node; threads anywhere in the application are
// named by an Addr, a <process, thread> pair. Messages of any size (up to
// Config.MaxMessage) carry a Tag and are exchanged with blocking (Send,
// Recv) or non-blocking (Isend, Irecv returning a *Request) primitives.
// A message's tag is 0 or more; receives and probes also take AnyTag,
// and Any, AnyProc and AnyThread as the source. A send to a wildcard
// address or with a negative tag fails with ErrInvalid, as does a receive
// with a negative tag other than AnyTag.
// Messages between the same pair of threads with the same tag are never
// overtaken: they are received in the order they were sent.
//
// Inside a Node one dispatcher per fabric port multiplexes all threads over
// that port: it cuts messages into fragments of at most 64 KiB, reassembles
// them by bitmap, acknowledges and retransmits, and refuses (BUSY) what it
// has no memory for so that senders slow down instead of losing data. A
// thread blocked in Send, Recv or Wait drives the port its message comes
// through itself (caller-driven progress), so that the message needs no
// hand-off between threads; the dispatcher takes over when no thread
// waits. Messages between threads of the same process never touch a
// fabric.
//
// Send buffers: the data slice given to Isend is read by the library until
// the request completes (Test reports true or Wait returns); it must not be
// modified before then. A small message (EagerLimit bytes or less) to
// another process is copied, and its request is done when Isend returns: a
// delivery that fails later is reported by the next send to that process
// (see Thread.Isend). Send (and Ssend) return only when the destination
// process has accepted the whole message, so the buffer is free again on
// return.
//
// A node is made in one of three ways: NewNode with its peers given by
// hand (Config.Peers, AddPeer); Join, which meets the others through the
// directory and keeps routes to every member (Routes); and FromEnv, which
// is Join configured by the environment a launcher (pcorrun, Slurm,
// mpirun) sets. Errors are testable with errors.Is (ErrUnreachable,
// ErrNoPath, ErrPeerDown, ...) and errors.As (*UnreachableError,
// *PeerDownError). Three packages of this module appear in the API on
// purpose: fabric (a Listen may bring its own fabric.Port), directory
// (Node.Directory is the membership session, JoinConfig.OnEvent sees its
// events) and routing (Node.Routes is the table, JoinConfig.Costs prices
// the links).
package pcor
