package pcor

import (
	"time"

	"github.com/pcor-go/pcor/internal/engine"
)

// Mode selects how a port's dispatcher waits for datagrams.
type Mode int

// Dispatcher modes.
const (
	// Blocking (default) waits in the fabric; an idle node burns no CPU.
	Blocking Mode = iota
	// Polling spins on the fabric for the lowest latency, using a core
	// while datagrams come; after 10 ms without one the dispatcher waits
	// in the fabric as Blocking does, until the next.
	Polling
)

func (m Mode) String() string { return engine.Mode(m).String() }

// Peer tells a node how to reach another process directly.
type Peer struct {
	// Proc is the process reached.
	Proc ProcID
	// Fabric selects the local port: the first one of this kind
	// (default "udp").
	Fabric string
	// Addr is the peer's endpoint on that fabric.
	Addr string
}

// Config configures a Node. The zero value, with a JobKey, is a node with
// one UDP port on loopback.
type Config struct {
	// Proc is this process's id (its rank); AnyProc is refused.
	Proc ProcID
	// JobKey is the application's key: the same non-zero value in every
	// process of one run (NewNode refuses 0 with ErrNoJobKey).
	JobKey uint64
	// Listen lists the ports to open (default: one UDP port on
	// loopback, 127.0.0.1 with a port the system chooses).
	Listen []Listen
	// Peers are the processes reached directly, added as AddPeer does.
	Peers []Peer
	// MaxMessage is the largest message (default 1 GiB).
	MaxMessage int64
	// RecvBudget bounds the bytes held for messages no thread has received
	// yet (default 256 MiB); beyond it senders are told BUSY and wait.
	RecvBudget int64
	// MCBs is the most message control blocks, one per message arrived
	// and not yet received (default 65536, made 4096 at a time as
	// needed); beyond it senders are told BUSY and wait.
	MCBs int
	// Buckets is the size of the hashed receive table (default 4096).
	Buckets int
	// UnreachableTimeout: a destination silent this long while messages
	// to it are outstanding turns them into ErrUnreachable (default 5 s).
	UnreachableTimeout time.Duration
	// Window is the most fragments in flight to one peer (default 4096).
	Window int
	// SumBodies keeps pcor's checksum over message bodies on fabrics that
	// protect the bytes they carry themselves (UDP's checksum, RDMA's
	// CRC), where by default only datagram headers are summed.
	SumBodies bool
}
