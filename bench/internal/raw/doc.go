// Package raw holds the baselines the benchmark prints beside pcor: raw
// UDP ping-pong and raw unbatched UDP stream over the fabric/udp port (the
// same system calls pcor uses, one datagram per call, no pcor), a raw TCP
// stream on loopback, Go channel ping-pong and stream for threads of one
// process, and raw verbs SEND/RECV ping-pong and RDMA WRITE stream
// between two processes on an RDMA device (fabric/rdma BaselineEnd).
package raw

import (
	"errors"
	"time"
)

// ErrLost is returned when a UDP baseline lost a datagram it cannot do
// without (a ping-pong reply, the end-of-stream acknowledgement).
var ErrLost = errors.New("raw: datagram lost")

// Sample is one timed one-way transfer.
type Sample struct {
	Bytes    int64         // payload bytes the receiver got
	Messages int64         // messages (or datagrams) the receiver got
	Elapsed  time.Duration // time they took
}

// MBps is the throughput in MB/s (10^6 bytes per second).
func (s Sample) MBps() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Bytes) / s.Elapsed.Seconds() / 1e6
}

// Rate is the message rate per second.
func (s Sample) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Messages) / s.Elapsed.Seconds()
}
