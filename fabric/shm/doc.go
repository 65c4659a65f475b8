// Package shm is a fabric for processes on the same host: datagrams travel
// through single-producer/single-consumer rings in shared memory instead of
// through the kernel's network stack.
//
// Each listening port owns one segment (a file in a tmpfs directory,
// /dev/shm by default). The segment holds a header and a fixed number of
// slots; a sending port claims one slot of the receiver's segment and is the
// only producer of that slot's ring, the receiving port its only consumer.
// Sending copies the datagram into the ring and publishes it with one atomic
// store; a receiver that found nothing sleeps on its doorbell, a named pipe
// beside the segment read through the Go runtime's poller (so an idle
// process has no thread waiting in a system call), and a sender writes to
// the doorbell only when the receiver said it sleeps.
//
// Processes share memory only when they see the same tmpfs: an Endpoint
// carries a host identity made of the kernel's boot id and the identity of
// the segment directory, so processes in different network namespaces of
// one host use the fabric, and processes in different containers (each with
// its own /dev/shm) refuse each other's endpoints instead of trying.
//
// A crashed peer leaves no wedged ring. A receiver frees the slot of a
// sender process that is gone once its ring is drained; a sender stops
// waiting for room in the ring of a receiver that closed or died and drops
// the datagram (datagrams are unreliable, as on every fabric); the segment
// of a crashed receiver is removed by the next port that listens in the
// same directory.
package shm
