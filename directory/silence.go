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

// timedWriter writes to a connection whose other side reads, and fails a
// write once that side has taken nothing of it for timeout. Like
// silenceReader it judges the other side only for time this process could
// write: a write the other side took part of is carried on with a fresh
// deadline, and so is one whose deadline ran out while this process was
// stalled (stopped, or given no CPU) between setting the deadline and
// writing (the write then failed within half the timeout), or during the
// write (the deadline fired later than half the timeout after it was due).
type timedWriter struct {
	conn    net.Conn
	timeout time.Duration
}

func (w timedWriter) Write(b []byte) (int, error) {
	written := 0
	for {
		start := time.Now()
		w.conn.SetWriteDeadline(start.Add(w.timeout))
		called := time.Now()
		n, err := w.conn.Write(b[written:])
		written += n
		if err == nil || w.timeout <= 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return written, err
		}
		if n > 0 || time.Since(called) < w.timeout/2 || time.Since(start)-w.timeout > w.timeout/2 {
			continue
		}
		return written, err
	}
}
