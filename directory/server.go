package directory

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"time"
)

// Defaults of ServerConfig.
const (
	DefaultHeartbeatInterval = 500 * time.Millisecond
	DefaultHeartbeatTimeout  = 2 * time.Second
	// maxQueued is the most frames waiting for one slow client before its
	// session is dropped.
	maxQueued = 1 << 14
)

// ServerConfig configures a directory server.
type ServerConfig struct {
	// JobKey is the application's key; joins carrying another are refused.
	JobKey uint64
	// Size is the number of processes started with the application.
	// Process ids below Size are kept for processes that ask for them
	// (their rank); a join without a requested id gets the lowest free id
	// at or above Size.
	Size int
	// HeartbeatInterval is how often each side pings (default 500 ms).
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is the silence after which a process counts as
	// gone (default 2 s). A closed TCP session counts at once.
	HeartbeatTimeout time.Duration
	// MaxFrame limits one frame's payload (default DefaultMaxFrame).
	MaxFrame int
	// OnEvent, if set, is called with every membership change, in order.
	// It must not block or call the Server.
	OnEvent func(Event)
	// WaitForMembers makes Close wait, before stopping, until every
	// member has gone: left, closed its session, or been silent for
	// HeartbeatTimeout. A directory served by one of the application's
	// own processes then outlives every other member's orderly leave.
	// Bootstrap sets it for the directory it serves.
	WaitForMembers bool
}

func (c ServerConfig) withDefaults() ServerConfig {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if c.HeartbeatInterval > c.HeartbeatTimeout {
		c.HeartbeatInterval = c.HeartbeatTimeout / 2
	}
	if c.MaxFrame <= 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	return c
}

// Server is a running directory.
type Server struct {
	cfg ServerConfig
	ln  net.Listener

	mu       sync.Mutex
	members  map[uint32]*session
	sessions map[*session]struct{}
	gone     chan struct{} // closed and replaced whenever a member goes
	closed   bool

	wg   sync.WaitGroup
	done chan struct{}
	err  error // why accepting stopped; set before done is closed
}

// NewServer starts serving the directory on ln. Close stops it and closes
// ln.
func NewServer(ln net.Listener, cfg ServerConfig) (*Server, error) {
	if ln == nil {
		return nil, errors.New("directory: nil listener")
	}
	if cfg.Size < 0 {
		return nil, fmt.Errorf("directory: negative size %d", cfg.Size)
	}
	s := &Server{
		cfg:      cfg.withDefaults(),
		ln:       ln,
		members:  make(map[uint32]*session),
		sessions: make(map[*session]struct{}),
		gone:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Serve runs a directory on ln until ctx is done or accepting fails, then
// closes it. It returns ctx's error or the accept error.
func Serve(ctx context.Context, ln net.Listener, cfg ServerConfig) error {
	s, err := NewServer(ln, cfg)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	case <-s.done:
		s.Close()
		return s.err
	}
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Done is closed when the server stops accepting (Close or a listener
// failure); Err then says why.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err is nil while the server runs, ErrClosed after Close, or the accept
// error that stopped it.
func (s *Server) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Members returns the current membership, ordered by process id.
func (s *Server) Members() []Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked()
}

// Close stops the server: the listener and every session are closed and
// all its goroutines have ended when it returns. With WaitForMembers it
// first waits until no member is left (see Shutdown). It is idempotent.
func (s *Server) Close() error {
	if s.cfg.WaitForMembers {
		return s.Shutdown(context.Background())
	}
	return s.closeNow()
}

// Shutdown waits until every member has gone (left, closed its session,
// or been silent for HeartbeatTimeout), still admitting joins meanwhile,
// then stops the server as Close does. When ctx ends first it stops the
// server at once and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	for {
		s.mu.Lock()
		n, gone, closed := len(s.members), s.gone, s.closed
		s.mu.Unlock()
		if n == 0 || closed {
			return s.closeNow()
		}
		select {
		case <-gone:
		case <-ctx.Done():
			s.closeNow()
			return ctx.Err()
		}
	}
}

func (s *Server) closeNow() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	for ss := range s.sessions {
		ss.conn.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
	return nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	var err error
	for {
		var c net.Conn
		c, err = s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			break
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			continue
		}
		ss := newSession(s, c)
		s.sessions[ss] = struct{}{}
		s.wg.Add(2)
		s.mu.Unlock()
		go ss.readLoop()
		go ss.writeLoop()
	}
	s.mu.Lock()
	if s.closed {
		err = ErrClosed
	}
	s.mu.Unlock()
	s.err = err
	close(s.done)
}

func (s *Server) snapshotLocked() []Member {
	ms := make([]Member, 0, len(s.members))
	for _, ss := range s.members {
		ms = append(ms, ss.member)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Proc < ms[j].Proc })
	return ms
}

// broadcastLocked queues an event for every joined session but skip.
func (s *Server) broadcastLocked(ev Event, skip *session) {
	b, err := encodeMessage(&message{Type: msgEvent, Event: &wireEvent{Kind: ev.Kind, Member: ev.Member, Reason: ev.Reason}})
	if err != nil {
		return
	}
	for _, ss := range s.members {
		if ss != skip {
			ss.enqueue(b)
		}
	}
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(ev)
	}
}

// join admits a session: it checks the key, picks the process id, queues
// the welcome for the session and the Joined event for everyone else. It
// returns the refusal to send, if any.
func (s *Server) join(ss *session, m *message) *message {
	if m.Version != protoVersion {
		return &message{Type: msgRefuse, Code: codeVersion, Error: fmt.Sprintf("protocol version %d not supported (want %d)", m.Version, protoVersion)}
	}
	var want, have [8]byte
	binary.BigEndian.PutUint64(want[:], s.cfg.JobKey)
	binary.BigEndian.PutUint64(have[:], m.JobKey)
	if subtle.ConstantTimeCompare(want[:], have[:]) != 1 {
		return &message{Type: msgRefuse, Code: codeJobKey, Error: "wrong job key"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &message{Type: msgRefuse, Error: "directory closing"}
	}
	var proc uint32
	if m.Proc != nil {
		proc = *m.Proc
		if _, taken := s.members[proc]; taken {
			return &message{Type: msgRefuse, Code: codeProc, Error: fmt.Sprintf("process id %d already taken", proc)}
		}
	} else {
		proc = uint32(s.cfg.Size)
		for {
			if _, taken := s.members[proc]; !taken {
				break
			}
			proc++
		}
	}
	ss.member = Member{Proc: proc, Host: m.Host, Ports: m.Ports}
	ss.joined = true
	s.members[proc] = ss
	p := proc
	b, err := encodeMessage(&message{
		Type:     msgWelcome,
		Proc:     &p,
		Members:  s.snapshotLocked(),
		Size:     s.cfg.Size,
		Interval: millis(s.cfg.HeartbeatInterval),
		Timeout:  millis(s.cfg.HeartbeatTimeout),
	})
	if err != nil {
		delete(s.members, proc)
		ss.joined = false
		return &message{Type: msgRefuse, Error: err.Error()}
	}
	ss.enqueue(b)
	s.broadcastLocked(Event{Kind: Joined, Member: ss.member}, ss)
	return nil
}

// drop ends a session; a joined one is announced as left with reason.
func (s *Server) drop(ss *session, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[ss]; !ok {
		return
	}
	delete(s.sessions, ss)
	ss.stop() // the writer flushes what is queued and closes the connection
	if ss.joined && s.members[ss.member.Proc] == ss {
		delete(s.members, ss.member.Proc)
		close(s.gone)
		s.gone = make(chan struct{})
		if !s.closed {
			s.broadcastLocked(Event{Kind: Left, Member: ss.member, Reason: reason}, ss)
		}
	}
}
