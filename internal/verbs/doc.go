// Package verbs speaks RDMA verbs directly to the kernel's uverbs
// interface (/dev/infiniband/uverbsN) with write and ioctl commands and
// mmap'd queues: no cgo and no rdma-core.
//
// The data path follows the soft-RoCE (rxe) provider ABI: send, receive and
// completion queues are rings shared with the kernel, a send is a work
// request written into the send ring followed by an empty POST_SEND write
// (the doorbell), a receive is a work request written into the receive
// ring, and completions are read from the completion ring. Hardware
// providers whose doorbells live in device memory are detected and refused
// with ErrUnsupportedProvider.
//
// The package is layered in small files: abi*.go (uapi constants and
// struct layouts), cmd.go (command transport), sysfs.go (device discovery),
// context.go, gid.go, pd.go, mr.go, ring.go, cq.go, qp.go (verbs objects),
// and baseline*.go (raw SEND/RECV latency and RDMA WRITE bandwidth, the
// analogues of perftest's ib_send_lat and ib_write_bw, within one process
// or between two). The RDMA fabric (fabric/rdma) and the benchmarks use it.
package verbs
