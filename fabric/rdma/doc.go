// Package rdma is a fabric.Port over RDMA verbs, spoken directly to the
// kernel's uverbs interface through internal/verbs (no cgo and no
// rdma-core; soft-RoCE, rxe, is the provider it drives).
//
// Reliable-connected queue pairs are per peer. A Port runs a small TCP
// listener (its Endpoint, host:port); the first Send to an endpoint dials
// it and both sides exchange {GID, QPN, PSN} and bring their queue pairs to
// RTS, as perftest does without rdma_cm. The TCP connection then stays open
// as a liveness signal: when it breaks, the queue pair is retired and
// datagrams to it are dropped and counted.
//
// Receive buffers come from a registered pool of 64 KiB buffers; each
// peer QP keeps Config.RecvPerPeer of them posted, and a consumed buffer is
// replaced at once from the pool (also while the consumer is blocked in
// Send), so that two processes sending to each other never wait on each
// other's receive rings. Send copies Head and Body into one registered
// send buffer, or gathers a Body that lies in memory from Port.Alloc as a
// second scatter/gather element without copying it.
//
// The package is layered in small files: config.go, pool.go, handshake.go,
// dial.go, conn.go, port.go, send.go and recv.go.
package rdma
