package directory

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"time"
)

// AnyProc in JoinRequest.Proc lets the directory choose the process id.
const AnyProc = -1

// JoinRequest describes the joining process.
type JoinRequest struct {
	// JobKey must equal the directory's key.
	JobKey uint64
	// Proc is the process id asked for (the rank), or AnyProc.
	Proc int
	// Host names this machine in the membership (default os.Hostname).
	Host string
	// Ports are the fabric ports peers reach this process on.
	Ports []PortInfo
	// MaxFrame limits one received frame (default DefaultMaxFrame).
	MaxFrame int
	// OnEvent, if set, is called with every membership change after the
	// cache was updated, in order, from the client's reader goroutine. It
	// must not block for long. With OnEvent set, the Events channel
	// carries nothing (and is closed when the session ends).
	OnEvent func(Event)
}

// Client is a joined process's session with the directory. Lookups are
// served from a local cache that the directory's events keep current.
type Client struct {
	conn     net.Conn
	proc     uint32
	maxFrame int
	interval time.Duration
	timeout  time.Duration
	onEvent  func(Event)

	wmu sync.Mutex // serialises writes

	size int // processes started with the application, from the welcome

	mu      sync.Mutex
	members map[uint32]Member
	handled int           // members counted once OnEvent returned for their change
	changed chan struct{} // closed and replaced on every change
	pending []Event       // events not yet handed to the Events channel
	byeSeen bool

	events    chan Event
	evWake    chan struct{}
	closeCh   chan struct{}
	closeOnce sync.Once
	done      chan struct{} // closed when the session ended
	err       error         // why; set before done is closed
	wg        sync.WaitGroup
}

// Join connects to the directory at addr, joins with req and returns once
// the directory has admitted the process (or refused it: ErrBadJobKey,
// ErrProcTaken, ErrRefused). ctx bounds the connection and the handshake.
func Join(ctx context.Context, addr string, req JoinRequest) (*Client, error) {
	if err := checkPorts(req.Ports); err != nil {
		return nil, fmt.Errorf("directory: join: %w", err)
	}
	if req.Proc < AnyProc || int64(req.Proc) > int64(^uint32(0)) {
		return nil, fmt.Errorf("directory: join: bad process id %d", req.Proc)
	}
	if req.Host == "" {
		req.Host, _ = os.Hostname()
	}
	if req.MaxFrame <= 0 {
		req.MaxFrame = DefaultMaxFrame
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("directory: join %s: %w", addr, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	c, err := handshake(conn, req)
	if !stop() {
		if c == nil {
			conn.Close()
		} else {
			c.Close()
		}
		return nil, fmt.Errorf("directory: join %s: %w", addr, ctx.Err())
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("directory: join %s: %w", addr, err)
	}
	c.wg.Add(3)
	go c.readLoop()
	go c.pingLoop()
	go c.pumpEvents()
	return c, nil
}

func handshake(conn net.Conn, req JoinRequest) (*Client, error) {
	j := &message{Type: msgJoin, Version: protoVersion, JobKey: req.JobKey, Host: req.Host, Ports: req.Ports}
	if req.Proc != AnyProc {
		p := uint32(req.Proc)
		j.Proc = &p
	}
	b, err := encodeMessage(j)
	if err != nil {
		return nil, err
	}
	if err := writeFrame(conn, b); err != nil {
		return nil, err
	}
	for {
		b, err := readFrame(conn, req.MaxFrame)
		if err != nil {
			return nil, err
		}
		m, err := decodeMessage(b)
		if err != nil {
			return nil, err
		}
		switch m.Type {
		case msgPing:
			continue
		case msgRefuse:
			return nil, refusal(m)
		case msgWelcome:
		default:
			return nil, fmt.Errorf("%w: %s before welcome", ErrProtocol, m.Type)
		}
		c := &Client{
			conn:     conn,
			proc:     *m.Proc,
			maxFrame: req.MaxFrame,
			interval: time.Duration(m.Interval) * time.Millisecond,
			timeout:  time.Duration(m.Timeout) * time.Millisecond,
			onEvent:  req.OnEvent,
			size:     m.Size,
			members:  make(map[uint32]Member, len(m.Members)),
			changed:  make(chan struct{}),
			events:   make(chan Event),
			evWake:   make(chan struct{}, 1),
			closeCh:  make(chan struct{}),
			done:     make(chan struct{}),
		}
		for _, mb := range m.Members {
			c.members[mb.Proc] = mb
		}
		c.handled = len(c.members)
		return c, nil
	}
}

func refusal(m *message) error {
	switch m.Code {
	case codeJobKey:
		return ErrBadJobKey
	case codeProc:
		return fmt.Errorf("%w: %s", ErrProcTaken, m.Error)
	default:
		return fmt.Errorf("%w: %s", ErrRefused, m.Error)
	}
}

// Proc is the process id the directory gave this process.
func (c *Client) Proc() uint32 { return c.proc }

// Size is the number of processes started with the application, as the
// directory was told by its launcher (0 when it was not told): the ranks
// are 0 to Size-1, and processes joining later get ids at or above it.
func (c *Client) Size() int { return c.size }

// Members returns the cached membership (this process included), ordered by
// process id.
func (c *Client) Members() []Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := make([]Member, 0, len(c.members))
	for _, m := range c.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Proc < ms[j].Proc })
	return ms
}

// Lookup returns a member from the cache.
func (c *Client) Lookup(proc uint32) (Member, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.members[proc]
	return m, ok
}

// Events delivers every membership change after the join, in order (unless
// JoinRequest.OnEvent is set). Events not yet read are kept, so a reader
// may start late. It is closed when the session ends.
func (c *Client) Events() <-chan Event { return c.events }

// Done is closed when the session has ended; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is nil while the session lives, then ErrClosed after Close or Leave,
// or an error wrapping ErrLost.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Wait blocks until at least n members are present (and OnEvent, if set,
// has returned for each change that made them so).
func (c *Client) Wait(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have, ch := c.handled, c.changed
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("directory: waiting for %d members (have %d): %w", n, have, ctx.Err())
		case <-c.done:
			return fmt.Errorf("directory: waiting for %d members (have %d): %w", n, have, c.err)
		}
	}
}

// Leave tells the directory this process leaves (announced with reason
// "left"), waits for its acknowledgement or ctx, and closes the client.
func (c *Client) Leave(ctx context.Context) error {
	b, _ := encodeMessage(&message{Type: msgLeave})
	err := c.write(b)
	if err == nil {
		select {
		case <-c.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	c.Close()
	return err
}

// Close ends the session at once (the directory announces the process as
// left because its connection closed). All goroutines have ended when it
// returns. It is idempotent.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { close(c.closeCh) })
	c.conn.Close()
	c.wg.Wait()
	return nil
}

func (c *Client) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return writeFrame(timedWriter{c.conn, c.timeout}, b)
}

func (c *Client) readLoop() {
	defer c.wg.Done()
	var err error
	r := &silenceReader{conn: c.conn, timeout: c.timeout}
	for {
		var b []byte
		if b, err = readFrame(r, c.maxFrame); err != nil {
			break
		}
		var m *message
		if m, err = decodeMessage(b); err != nil {
			break
		}
		if m.Type == msgBye {
			c.mu.Lock()
			c.byeSeen = true
			c.mu.Unlock()
			break
		}
		if m.Type == msgEvent {
			c.apply(Event{Kind: m.Event.Kind, Member: m.Event.Member, Reason: m.Event.Reason})
		}
	}
	c.conn.Close()
	c.mu.Lock()
	select {
	case <-c.closeCh:
		c.err = ErrClosed
	default:
		switch {
		case c.byeSeen:
			c.err = ErrClosed
		case errors.Is(err, os.ErrDeadlineExceeded):
			c.err = fmt.Errorf("%w: directory silent for %v", ErrLost, c.timeout)
		default:
			c.err = fmt.Errorf("%w: %v", ErrLost, err)
		}
	}
	c.mu.Unlock()
	close(c.done)
	c.signalEvents()
}

func (c *Client) apply(ev Event) {
	c.mu.Lock()
	switch ev.Kind {
	case Joined:
		c.members[ev.Member.Proc] = ev.Member
	case Left:
		delete(c.members, ev.Member.Proc)
	}
	if c.onEvent == nil {
		c.pending = append(c.pending, ev)
	}
	c.mu.Unlock()
	if c.onEvent != nil {
		c.onEvent(ev)
	}
	// Count the change for Wait only now, so that a Wait that returns
	// has seen OnEvent handle every change it counted.
	c.mu.Lock()
	c.handled = len(c.members)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	c.signalEvents()
}

func (c *Client) signalEvents() {
	select {
	case c.evWake <- struct{}{}:
	default:
	}
}

// pumpEvents moves queued events to the Events channel so the reader never
// blocks on a slow consumer.
func (c *Client) pumpEvents() {
	defer c.wg.Done()
	defer close(c.events)
	for {
		c.mu.Lock()
		q := c.pending
		c.pending = nil
		c.mu.Unlock()
		for _, ev := range q {
			select {
			case c.events <- ev:
			case <-c.closeCh:
				return
			}
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-c.evWake:
		case <-c.closeCh:
			return
		case <-c.done:
			c.mu.Lock()
			more := len(c.pending) > 0
			c.mu.Unlock()
			if !more {
				return
			}
		}
	}
}

func (c *Client) pingLoop() {
	defer c.wg.Done()
	ping, _ := encodeMessage(&message{Type: msgPing})
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if c.write(ping) != nil {
				return
			}
		case <-c.done:
			return
		case <-c.closeCh:
			return
		}
	}
}
