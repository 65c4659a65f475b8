// Package rdma is a fabric.Port over RDMA verbs, spoken directly to the
// kernel's uverbs interface through internal/verbs (no cgo and no
// rdma-core; soft-RoCE, rxe, is the provider it drives).
//
// Reliable-connected queue pairs are per peer. A Port has one UD queue
// pair for its connection manager, whose GID and QPN are its Endpoint
// ("IP:QPN"), so a process needs no address beyond the ones its peers
// learn from the directory and no listening socket. The first Send to an
// endpoint sends it a request with this side's queue pairs; the peer
// brings its own to RTS and answers with them, as rdma_cm does over its
// own datagrams. A peer's datagrams travel on one RC queue pair, which
// delivers them once and in order, so the port is reliable
// (fabric.Reliable): pcor runs no acknowledgements of its own over it, and
// a receiver with no room holds a sender back (fabric.Holder) by not
// reposting its receives. Every Config.KeepAlive each side reads zero
// bytes from the other, a READ the peer's kernel answers: a peer whose
// queue pairs died with its process fails it, or any work outstanding to
// it, within a second; a peer that says it closed is retired at once, and
// datagrams to a lost peer are dropped, counted and reported
// (OnPeerLost).
//
// Receive buffers come from a registered pool of 64 KiB buffers, which
// grows by Config.RecvPerPeer buffers for each peer that connects once too
// few are free, up to Config.MaxRecvBuffers (a peer past that is refused
// and told why). Each peer QP keeps Config.RecvPerPeer of them posted,
// and a consumed buffer is replaced at once from the pool (also while the
// consumer is blocked in Send), so that two processes sending to each
// other never wait on each other's receive rings. Send copies Head and
// Body into one registered send buffer, or gathers a Body that lies in
// memory from Port.Alloc as a second scatter/gather element without
// copying it.
//
// The package is layered in small files: config.go, pool.go, handshake.go,
// cm.go, conn.go, port.go, send.go, recv.go, hold.go, rma.go and
// regcache.go.
package rdma
