// Package udp is the UDP fabric: a fabric.Port backed by one UDP socket.
//
// # Batching
//
// Send hands the kernel a whole batch of datagrams in one sendmmsg call and
// Receive takes up to a batch in one recvmmsg call, so the per-system-call
// cost is shared by many datagrams. Each outgoing datagram is described by
// two iovecs, Head and Body, so the caller's Body is never copied. The
// mmsghdr, iovec and control-message arrays are allocated once per sender
// (from a pool) and once per receiver; the hot path allocates nothing.
// Destination sockaddrs are encoded once, when an Endpoint is parsed, and
// the Endpoint (always a pointer) carries them to every Send.
//
// A datagram sent alone, the leg of a ping-pong, goes by sendto instead,
// through a socket of the port's own connected to its destination (one per
// destination, for the first 64): the kernel then reuses the route it
// resolved at connect rather than looking it up for every datagram. Such a
// socket only sends, from the port's address and a port number of its own
// (Port.Connected, Stats.ConnectedSends); what it refuses is sent again
// through the port's socket. A lone receive (one datagram expected) is a
// recvmsg rather than a recvmmsg of one.
//
// # GSO and GRO
//
// Where consecutive datagrams of a batch go to the same Endpoint and have the
// same size (the last of a run may be shorter), Send coalesces them into one
// message carrying a UDP_SEGMENT control message: the kernel (or the NIC)
// cuts it back into separate datagrams, so a run of up to 64 datagrams or
// 64 KiB costs one trip through the stack. The iovecs of such a message are
// [h1,b1,h2,b2,...]. If the kernel refuses a GSO send and the same datagrams
// then go through one by one, GSO is switched off for the port
// (Stats.GSOFallbacks counts it).
//
// On receive, UDP_GRO lets the kernel hand over several datagrams of one flow
// as one buffer together with their segment size; Receive splits such a
// buffer back into the original datagrams before returning them. Receive
// buffers are 64 KiB each and owned by the port, so the slices returned by
// Receive and Poll alias port memory that stays valid until the next call.
//
// # Blocking and waiting
//
// The socket is bound through package net and then taken out of Go's
// network poller: the port keeps a blocking descriptor of its own and
// every call that must not wait says so (MSG_DONTWAIT). Receive and Wait
// sleep in recvmmsg (MSG_WAITFORONE) on the calling goroutine's OS
// thread, so a datagram wakes the thread that waits for it and no other:
// no poller thread is woken first to hand the goroutine over (on a VM whose
// idle vCPUs halt, each such hand-over costs tens of microseconds). Wait
// is meant for a caller that drives the port while it waits for its own
// message; Interrupt ends it, by a datagram the socket sends itself
// holding the port's token, 16 random bytes drawn at Listen (taken for an
// interrupt by its content and never handed over: receiving a datagram's
// source address as well took about 80 ns more).
// Deadlines bound the sleep through SO_RCVTIMEO. A Send that meets a full
// socket buffer waits in poll(2) for room. Close shuts the socket down,
// which wakes every call blocked on it (they return fabric.ErrClosed), and
// closes the descriptor once they have left.
//
// # Socket buffers
//
// Socket buffers default to 8 MiB; as root they are forced past
// net.core.rmem_max/wmem_max with SO_RCVBUFFORCE/SO_SNDBUFFORCE, so a
// burst of a full window of fragments fits. SocketBuffers reports what the
// kernel granted; Stats.RecvOverflows is the kernel's count of datagrams
// dropped for a full receive buffer (SO_RXQ_OVFL).
//
// # Datagram size and MTU
//
// MaxDatagram(to) is 65507 bytes for loopback destinations (the largest
// IPv4 UDP payload). Elsewhere it is the MTU of the route toward to, less
// the IP and UDP headers (1472 bytes on a 1500-byte IPv4 link). The route
// MTU is found without sending anything: a probe socket created with the
// port (so in the same network namespace) is connected to the destination
// and asked for IP_MTU (IPV6_MTU), and the answer is cached in the Endpoint
// for a while. The dispatcher cuts fragments to that size, so on a small-MTU
// link nothing relies on IP fragmentation, and runs of MTU-sized fragments
// still leave in one GSO send. Config.MTU overrides the probe, for tests.
//
// # Binding
//
// A port asked for by number is bound with SO_REUSEADDR and SO_REUSEPORT
// (github.com/libp2p/go-reuseport), so a restarted process can rebind it
// while its predecessor's socket is still being torn down. Port 0 is
// bound without them: the kernel then picks a port no other socket holds
// (with SO_REUSEPORT it may pick one that another process of the same
// user holds, and spread the datagrams meant for one over both).
package udp
