package engine

import "time"

// Mode selects how a port's dispatcher waits for datagrams.
type Mode int

const (
	// Blocking waits in the fabric: an idle port burns no CPU.
	Blocking Mode = iota
	// Polling spins on the fabric for the lowest latency, using a core
	// while datagrams come; after pollIdle without one the dispatcher
	// parks as Blocking does, until the next.
	Polling
)

func (m Mode) String() string {
	if m == Polling {
		return "polling"
	}
	return "blocking"
}

// Config sizes an Engine. Zero fields take the defaults below.
type Config struct {
	Proc   ProcID
	JobKey uint64
	// MaxMessage is the largest message accepted (default 1 GiB).
	MaxMessage int64
	// RecvBudget bounds the bytes held for messages not yet received by a
	// thread (default 256 MiB). It is taken as fragments arrive, in
	// chunks of 256 KiB; a message larger than the budget goes straight
	// into its receive's buffer once the receive is posted, and waits
	// until then.
	RecvBudget int64
	// MCBs is the most message control blocks, one per message arrived
	// or arriving and not yet received by a thread (default 65536: 1,000
	// threads' streams with 64 messages each in flight). They are made as
	// needed, 4096 at a time; past the last, senders are told BUSY.
	MCBs int
	// Buckets is the number of receive-table buckets (default 4096, rounded
	// up to a power of two).
	Buckets int
	// UnreachableTimeout is how long a peer may stay silent while data is
	// outstanding before sends to it fail with ErrUnreachable (default 5 s).
	UnreachableTimeout time.Duration
	// Window is the most fragments in flight per peer (default 4096).
	Window int
	// AckDelay is how long an acknowledgement may wait for data going the
	// other way to carry it (default 500 µs; negative: acknowledge at once).
	// Out-of-order arrivals and every AckEvery fragments are acknowledged
	// at once regardless.
	AckDelay time.Duration
	// AckEvery is the most fragments acknowledged by one delayed ack
	// (default 8).
	AckEvery int
	// MinRTO and MaxRTO bound the retransmission timeout (default 10 ms, 1 s).
	MinRTO, MaxRTO time.Duration
	// SumBodies keeps the checksum over the body of every datagram. By
	// default a datagram sent on a port whose fabric protects its bytes
	// (fabric.Protected: UDP's own checksum) has its header summed
	// alone, which spares a pass over the data on each side.
	SumBodies bool
	// Rendezvous is the smallest message sent by rendezvous (read by the
	// receiver from the sender's memory, see rndv.go) on a port that
	// reads remote memory (default 32 KiB; negative: never).
	Rendezvous int64
}

const (
	defaultMaxMessage = 1 << 30
	defaultBudget     = 256 << 20
	defaultMCBs       = 1 << 16
	defaultBuckets    = 4096
	defaultUnreach    = 5 * time.Second
	defaultWindow     = 4096
	defaultMinRTO     = 10 * time.Millisecond
	defaultMaxRTO     = time.Second
	initialRTO        = 50 * time.Millisecond
	initialCwnd       = 32
	minCwnd           = 4
)

func (c *Config) fillLocked() {
	if c.MaxMessage <= 0 {
		c.MaxMessage = defaultMaxMessage
	}
	if c.RecvBudget <= 0 {
		c.RecvBudget = defaultBudget
	}
	if c.MCBs <= 0 {
		c.MCBs = defaultMCBs
	}
	if c.Buckets <= 0 {
		c.Buckets = defaultBuckets
	}
	b := 1
	for b < c.Buckets {
		b <<= 1
	}
	c.Buckets = b
	if c.UnreachableTimeout <= 0 {
		c.UnreachableTimeout = defaultUnreach
	}
	if c.Window <= 0 {
		c.Window = defaultWindow
	}
	if c.Window > 1<<16 {
		c.Window = 1 << 16
	}
	w := 64
	for w < c.Window {
		w <<= 1
	}
	c.Window = w
	if c.AckDelay == 0 {
		c.AckDelay = 500 * time.Microsecond
	}
	if c.AckEvery <= 0 {
		c.AckEvery = 8
	}
	if c.MinRTO <= 0 {
		c.MinRTO = defaultMinRTO
	}
	if c.MaxRTO <= 0 {
		c.MaxRTO = defaultMaxRTO
	}
	if c.Rendezvous == 0 {
		c.Rendezvous = defaultRendezvous
	}
}
