package directory

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// protoVersion is the version of the session protocol carried in a join.
const protoVersion = 1

// Message types of the session protocol. A session starts with the client's
// join, answered by welcome (or refuse, after which the server closes the
// connection); then the server sends events, both sides send pings, and a
// client's leave is answered by bye.
const (
	msgJoin    = "join"
	msgWelcome = "welcome"
	msgRefuse  = "refuse"
	msgEvent   = "event"
	msgPing    = "ping"
	msgLeave   = "leave"
	msgBye     = "bye"
)

// Refusal codes, mapped to errors on the client.
const (
	codeJobKey  = "jobkey"
	codeProc    = "proc"
	codeVersion = "version"
)

// Limits checked on every decoded message.
const (
	maxPorts   = 64
	maxMembers = 1 << 16
)

// message is the JSON form of every frame.
type message struct {
	Type    string     `json:"t"`
	Version int        `json:"v,omitempty"`
	JobKey  uint64     `json:"key,omitempty"`
	Proc    *uint32    `json:"proc,omitempty"`
	Host    string     `json:"host,omitempty"`
	Ports   []PortInfo `json:"ports,omitempty"`
	Members []Member   `json:"members,omitempty"`
	// Size is the number of processes started with the application
	// (welcome only; 0: not known).
	Size int `json:"size,omitempty"`
	// Interval and Timeout (milliseconds) tell the client how often to
	// ping and after how much silence the session counts as lost.
	Interval int64      `json:"interval,omitempty"`
	Timeout  int64      `json:"timeout,omitempty"`
	Event    *wireEvent `json:"event,omitempty"`
	Code     string     `json:"code,omitempty"`
	Error    string     `json:"error,omitempty"`
}

type wireEvent struct {
	Kind   EventKind `json:"kind"`
	Member Member    `json:"member"`
	Reason string    `json:"reason,omitempty"`
}

func encodeMessage(m *message) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("directory: encoding %s: %w", m.Type, err)
	}
	return b, nil
}

// decodeMessage parses and validates one frame's payload.
func decodeMessage(b []byte) (*message, error) {
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

func (m *message) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrProtocol, m.Type, fmt.Sprintf(format, a...))
	}
	if err := checkPorts(m.Ports); err != nil {
		return bad("%v", err)
	}
	switch m.Type {
	case msgJoin:
		if m.Version <= 0 {
			return bad("missing version")
		}
	case msgWelcome:
		if m.Proc == nil {
			return bad("missing process id")
		}
		if len(m.Members) > maxMembers {
			return bad("%d members", len(m.Members))
		}
		for i := range m.Members {
			if err := checkPorts(m.Members[i].Ports); err != nil {
				return bad("member %d: %v", m.Members[i].Proc, err)
			}
		}
		if m.Size < 0 || m.Size > math.MaxInt32 {
			return bad("size %d", m.Size)
		}
		if m.Interval <= 0 || m.Timeout <= 0 || m.Interval > m.Timeout {
			return bad("heartbeat interval %d ms, timeout %d ms", m.Interval, m.Timeout)
		}
	case msgEvent:
		if m.Event == nil {
			return bad("missing event")
		}
		if m.Event.Kind != Joined && m.Event.Kind != Left {
			return bad("unknown event kind %d", m.Event.Kind)
		}
		if err := checkPorts(m.Event.Member.Ports); err != nil {
			return bad("%v", err)
		}
	case msgRefuse, msgPing, msgLeave, msgBye:
	default:
		return fmt.Errorf("%w: unknown message type %q", ErrProtocol, m.Type)
	}
	return nil
}

func checkPorts(ps []PortInfo) error {
	if len(ps) > maxPorts {
		return fmt.Errorf("%d ports, limit %d", len(ps), maxPorts)
	}
	for _, p := range ps {
		if p.Fabric == "" || p.Addr == "" {
			return fmt.Errorf("port without fabric or address")
		}
		if p.Latency < 0 || !(p.Bandwidth >= 0) || math.IsInf(p.Bandwidth, 1) {
			return fmt.Errorf("port %s: bad latency or bandwidth", p.Addr)
		}
	}
	return nil
}

func millis(d time.Duration) int64 { return int64(d / time.Millisecond) }
