package fabric

// JobKeyed is implemented by ports that connect to their peers with
// messages of their own (an RDMA queue pair's handshake): given the job
// key, such a port refuses to connect with a port of another application,
// before any datagram flows. The engine sets the key when it adopts the
// port, before the port's endpoint is published; the datagrams themselves
// carry the key in their header as on every fabric.
type JobKeyed interface {
	SetJobKey(key uint64)
}
