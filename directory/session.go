package directory

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Reasons given in Left events.
const (
	ReasonLeft      = "left"
	ReasonClosed    = "connection closed"
	ReasonHeartbeat = "heartbeat lost"
	ReasonSlow      = "not reading its session"
	ReasonProtocol  = "protocol error"
)

// session is the server's side of one client connection. The reader
// goroutine owns the handshake and incoming frames; the writer goroutine
// owns every write (queued frames and pings) and closes the connection
// after the last queued frame once the session is stopped.
type session struct {
	srv  *Server
	conn net.Conn

	// member and joined are guarded by srv.mu.
	member Member
	joined bool

	mu       sync.Mutex
	queue    [][]byte
	stopped  bool
	overflow bool
	wake     chan struct{} // 1-buffered: queue not empty or stopped
}

func newSession(s *Server, c net.Conn) *session {
	return &session{srv: s, conn: c, wake: make(chan struct{}, 1)}
}

func (ss *session) signal() {
	select {
	case ss.wake <- struct{}{}:
	default:
	}
}

// enqueue queues a frame payload for the writer. A client that lets
// maxQueued frames pile up is cut off.
func (ss *session) enqueue(b []byte) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped || ss.overflow {
		return
	}
	if len(ss.queue) >= maxQueued {
		ss.overflow = true
		ss.queue = nil
		ss.conn.Close()
		return
	}
	ss.queue = append(ss.queue, b)
	ss.signal()
}

// stop tells the writer to flush and close.
func (ss *session) stop() {
	ss.mu.Lock()
	ss.stopped = true
	ss.mu.Unlock()
	ss.signal()
}

func (ss *session) readLoop() {
	defer ss.srv.wg.Done()
	cfg := &ss.srv.cfg
	reason := ss.handshake()
	r := &silenceReader{conn: ss.conn, timeout: cfg.HeartbeatTimeout}
	for reason == "" {
		b, err := readFrame(r, cfg.MaxFrame)
		if err != nil {
			reason = readFailure(err)
			break
		}
		m, err := decodeMessage(b)
		if err != nil {
			reason = ReasonProtocol
			break
		}
		switch m.Type {
		case msgPing:
		case msgLeave:
			if bye, err := encodeMessage(&message{Type: msgBye}); err == nil {
				ss.enqueue(bye)
			}
			reason = ReasonLeft
		default:
			reason = ReasonProtocol
		}
	}
	ss.mu.Lock()
	if ss.overflow {
		reason = ReasonSlow
	}
	ss.mu.Unlock()
	ss.srv.drop(ss, reason)
}

// handshake reads the join and admits or refuses it. It returns a non-empty
// reason when the session must end.
func (ss *session) handshake() string {
	cfg := &ss.srv.cfg
	b, err := readFrame(&silenceReader{conn: ss.conn, timeout: cfg.HeartbeatTimeout}, cfg.MaxFrame)
	if err != nil {
		return readFailure(err)
	}
	m, err := decodeMessage(b)
	if err != nil || m.Type != msgJoin {
		return ReasonProtocol
	}
	if refuse := ss.srv.join(ss, m); refuse != nil {
		if rb, err := encodeMessage(refuse); err == nil {
			ss.enqueue(rb)
		}
		return "refused: " + refuse.Error
	}
	return ""
}

func readFailure(err error) string {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ReasonHeartbeat
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET):
		// A process killed with data unread in its socket resets the
		// connection rather than closing it.
		return ReasonClosed
	case errors.Is(err, ErrProtocol), errors.Is(err, ErrFrameTooLarge):
		return ReasonProtocol
	default:
		return fmt.Sprintf("%s: %v", ReasonClosed, err)
	}
}

func (ss *session) writeLoop() {
	defer ss.srv.wg.Done()
	defer ss.conn.Close()
	cfg := &ss.srv.cfg
	ping, _ := encodeMessage(&message{Type: msgPing})
	tick := time.NewTicker(cfg.HeartbeatInterval)
	defer tick.Stop()
	write := func(b []byte) bool {
		if err := writeFrame(timedWriter{ss.conn, cfg.HeartbeatTimeout}, b); err != nil {
			ss.conn.Close() // the reader notices and drops the session
			return false
		}
		return true
	}
	for {
		select {
		case <-ss.wake:
		case <-tick.C:
			ss.mu.Lock()
			joined := len(ss.queue) == 0 && !ss.stopped
			ss.mu.Unlock()
			if joined && !write(ping) {
				return
			}
			continue
		}
		ss.mu.Lock()
		q := ss.queue
		ss.queue = nil
		stopped := ss.stopped
		ss.mu.Unlock()
		for _, b := range q {
			if !write(b) {
				return
			}
		}
		if stopped {
			return
		}
	}
}
