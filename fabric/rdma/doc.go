// Package rdma is a fabric.Port over RDMA verbs, spoken directly to the
// kernel's uverbs interface (/dev/infiniband/uverbsN) with write and ioctl
// commands and mmap'd queues: no cgo and no rdma-core.
//
// The data path follows the soft-RoCE (rxe) provider ABI: send, receive and
// completion queues are rings shared with the kernel, a send is a work
// request written into the send ring followed by an empty POST_SEND write
// (the doorbell), a receive is a work request written into the receive
// ring, and completions are read from the completion ring. Hardware
// providers whose doorbells live in device memory are detected and refused
// with ErrUnsupportedProvider.
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
// The package is layered in small files: abi*.go (uapi constants and
// struct layouts), cmd.go (command transport), sysfs.go (device discovery),
// context.go, gid.go, pd.go, mr.go, ring.go, cq.go, qp.go (verbs
// objects), config.go, pool.go, handshake.go, dial.go, conn.go, port.go,
// send.go and recv.go (the fabric.Port), and baseline.go (raw SEND/RECV
// latency and RDMA WRITE bandwidth, the analogues of perftest's
// ib_send_lat and ib_write_bw).
package rdma
