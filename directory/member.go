// Package directory is the naming and membership service of a pcor
// application: processes join with their job key and ports, receive their
// process id and the membership, and follow joins and leaves as events.
package directory

import "time"

// PortInfo describes one port a process listens on.
type PortInfo struct {
	// Fabric is the fabric kind: "udp", "rdma", "mem".
	Fabric string `json:"fabric"`
	// Network names the network the port is attached to; two ports can
	// reach each other directly only when Fabric and Network are equal.
	Network string `json:"network"`
	// Addr is the fabric endpoint in its String form.
	Addr string `json:"addr"`
	// Latency is the fixed per-message cost of the link (zero: unknown).
	Latency time.Duration `json:"latency,omitempty"`
	// Bandwidth is the link's bytes per second (zero: unknown).
	Bandwidth float64 `json:"bandwidth,omitempty"`
}

// Member is one process of the application.
type Member struct {
	Proc  uint32     `json:"proc"`
	Host  string     `json:"host,omitempty"`
	Ports []PortInfo `json:"ports"`
}

// EventKind says what happened to a member.
type EventKind int

// Membership events.
const (
	Joined EventKind = iota + 1
	Left
)

// Event is one membership change.
type Event struct {
	Kind   EventKind
	Member Member
	// Reason says why a member left (closed, heartbeat lost, killed).
	Reason string
}
