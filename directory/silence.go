package directory

import (
	"errors"
	"net"
	"os"
	"time"
)

// silenceReader reads a connection whose other side speaks at least every
// heartbeat interval, and fails a read with os.ErrDeadlineExceeded once
// that side has been silent for timeout. Silence is judged on the other
// side's behalf only when this process could have heard it:
//   - bytes that came but wait unread in the socket are no silence: this
//     process was late to read them (it got no CPU, or was stopped);
//   - a deadline that fired later than half the timeout after it was due
//     is taken for a stall of this process (stopped, or the machine gave
//     it no CPU): a directory or member stalled with it has had no time to
//     speak, and the silence is counted afresh from then.
//
// A timer on a loaded machine runs late by milliseconds, a few tens under
// the race detector, so a real silence is still found within 1.5 times the
// timeout.
type silenceReader struct {
	conn    net.Conn
	timeout time.Duration
}

func (r *silenceReader) Read(p []byte) (int, error) {
	for {
		start := time.Now()
		r.conn.SetReadDeadline(start.Add(r.timeout))
		n, err := r.conn.Read(p)
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if r.timeout > 0 && (time.Since(start)-r.timeout > r.timeout/2 || unread(r.conn)) {
			continue
		}
		return n, err
	}
}
