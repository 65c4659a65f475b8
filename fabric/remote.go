package fabric

import "errors"

// RemoteReader is implemented by ports with the RemoteMemory capability.
// It carries a large message by rendezvous: the sender exposes the
// message's memory and tells the receiver where it lies (a descriptor, a
// few bytes sent as an ordinary datagram); the receiver reads it straight
// into the destination buffer, with no copy on either side.
type RemoteReader interface {
	// Expose makes b readable by the port's peers until release is
	// called, and returns the descriptor a peer's ReadRemote takes (at
	// most MaxRemoteDesc bytes). b must stay untouched until release.
	Expose(b []byte) (desc []byte, release func(), err error)

	// ReadRemote fills dst with the memory the port at from exposed as
	// desc. It returns at once; done is called exactly once, from another
	// goroutine, with nil when dst holds the bytes, or with the reason it
	// cannot (the peer was lost, the port closed). desc must describe at
	// least len(dst) bytes.
	ReadRemote(from Endpoint, dst []byte, desc []byte, done func(error)) error
}

// RemoteReadable is implemented by RemoteReader ports whose peers may be
// refused reading exposed memory (shared memory under the kernel's ptrace
// rules): a message goes to to by rendezvous only when ReadableBy(to),
// and otherwise as datagrams.
type RemoteReadable interface {
	// ReadableBy reports whether the port at to is known to read this
	// port's exposed memory.
	ReadableBy(to Endpoint) bool
}

// RemoteReadMin is implemented by RemoteReader ports on which a remote read
// pays only from some size on (shared memory, where a message copied twice
// through a ring costs less than the kernel's single copy up to a few
// hundred KiB): a smaller message goes as datagrams.
type RemoteReadMin interface {
	// RemoteReadMin is the smallest message worth reading remotely.
	RemoteReadMin() int
}

// RemoteReadNow is implemented by RemoteReader ports whose read is a copy
// made by the calling thread (shared memory: the kernel copies from the
// other process). Where the caller holds nothing that the end of the read
// needs, the engine reads this way and runs what follows the read itself,
// instead of handing the end of each read to another goroutine (which
// costs a thread wake-up per message).
type RemoteReadNow interface {
	// ReadRemoteNow is ReadRemote that returns when the read is over,
	// with its outcome.
	ReadRemoteNow(from Endpoint, dst []byte, desc []byte) error
}

// MaxRemoteDesc bounds the descriptor of exposed memory.
const MaxRemoteDesc = 32

// ErrRegistrationLimit is returned (wrapped) when memory cannot be
// registered because a device or configured limit is reached.
var ErrRegistrationLimit = errors.New("fabric: memory registration limit reached")
