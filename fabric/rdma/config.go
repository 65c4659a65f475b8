package rdma

import (
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/internal/verbs"
)

// Config selects the device and sizes a Port. The zero value picks the
// first supported device, port 1 and its first RoCEv2 IPv4 GID.
type Config struct {
	Sysfs  string // sysfs mount; default /sys
	Device string // ib device name; default the first supported one
	Port   uint8  // device port; default 1
	GID    string // local GID (IPv6 or IPv4 form) to send from; default automatic

	// JobKey names the application: the port connects only with ports
	// of the same key, and refuses (and counts, Stats.Foreign) the others.
	// A pcor node sets it to its own job key (SetJobKey).
	JobKey uint64

	RecvBuffers int // 64 KiB receive buffers in the pool at first; default 256
	// RecvPerPeer is the number of receive buffers posted on each peer
	// QP; default 64, a peer's whole SendDepth: a sender with its send
	// queue full (a window of 64 rendezvous announcements, say) then
	// finds a posted buffer for each send, rather than a
	// receiver-not-ready NAK that stops its queue pair for the RNR timer
	// (0.64 ms). With 32, a 64 KiB stream met 140-170 such NAKs in one
	// guest benchmark run, and none with 64.
	RecvPerPeer int
	SendBuffers int // 64 KiB send buffers in the pool; default 128
	SendDepth   int // outstanding sends per QP; default 64
	// MaxRecvBuffers bounds the receive pool, which grows by RecvPerPeer
	// buffers (4 MiB by default) for each peer that connects once the
	// pool has too few free for it; default 8192 (512 MiB, 128 peers),
	// and at most what the device's completion queues hold. A peer that
	// would need more fails to connect ("receive buffer pool at its
	// limit").
	MaxRecvBuffers int

	// RegCacheBytes bounds the message buffers whose registration is kept
	// after use (and which stay referenced meanwhile); default 256 MiB.
	RegCacheBytes int64
	// MaxRegions bounds the registrations of message buffers alive at
	// once; default 4096 (and at most half the device's limit).
	MaxRegions int

	HandshakeTimeout time.Duration // connecting to a peer; default 5s
	// KeepAlive is how often the port checks each connected peer; default
	// 100ms. The check is a zero-length RDMA READ on the peer's queue
	// pair, which the peer's kernel answers without its process running:
	// a live peer whose threads are starved of CPU is still answered for,
	// and a dead one (whose queue pairs died with it) fails the READ once
	// the transport has tried RetryCount+1 times AckTimeout (see below).
	// PeerTimeout is a backstop: a peer from which nothing at all came
	// back (no completion, no answer to the check, no keep-alive message)
	// for that long is declared lost even if the transport has not given
	// up; default 10s. (A peer that closes its port says so at once.)
	KeepAlive    time.Duration
	PeerTimeout  time.Duration
	SendTimeout  time.Duration // waiting for send credit from a peer that answers nothing before it is declared dead; default 10s
	RetryBackoff time.Duration // after a failed connect, drop to that peer for this long; default 1s

	// AckTimeout is the QP ACK timeout exponent, 4.096µs·2^n; default 14
	// (67 ms). Work outstanding to a dead peer (a read, a send, the
	// keep-alive READ) fails after RetryCount+1 timeouts without an
	// answer from its kernel: 4 × 67 = 268 ms with the defaults. The timer restarts
	// with every packet that comes back, so a long READ does not need to
	// finish within it.
	AckTimeout uint8
	// RetryCount is the number of transport retries; default 3: a live
	// peer's kernel answers within the timeout however loaded the host
	// (pcor's guest tests at host load 14), and each retry more adds 67 ms
	// to how long a killed peer takes to show. (rxe
	// takes 7 to mean retry forever, as the verbs do for RNRRetry: a dead
	// peer would then never fail the work outstanding to it.)
	RetryCount uint8
	RNRRetry   uint8 // receiver-not-ready retries, 7 = forever; default 7

	// ReadMin is the smallest message pcor moves by rendezvous (an RDMA
	// READ by the receiver) rather than as datagrams
	// (fabric.RemoteReadMin); default DefaultReadMin.
	ReadMin int
	// ZeroCopyMin is the smallest Body in Alloc'd memory that Send has
	// the device read in place rather than copy into a send buffer;
	// default BufSize, that is never. Send then waits for the send to
	// complete, which takes a whole trip through the transport: a stream
	// of datagrams copied goes on while the device sends, and the copy of
	// one datagram costs less than that trip.
	ZeroCopyMin int
}

// DefaultReadMin is Config.ReadMin's default: 64 KiB, the smallest
// message that is more than one datagram, goes by one READ rather than
// two SENDs (README: the system calls and switches per message).
const DefaultReadMin = 64 << 10

// BufSize is the size of a pool buffer.
const BufSize = 64 << 10

// MaxDatagram is the largest datagram a Port carries: the fabric-wide
// limit, although one RC SEND could carry a whole BufSize.
const MaxDatagram = fabric.MaxDatagramSize

func (c Config) withDefaults() Config {
	if c.Port == 0 {
		c.Port = 1
	}
	if c.RecvBuffers <= 0 {
		c.RecvBuffers = 256
	}
	if c.RecvPerPeer <= 0 {
		c.RecvPerPeer = 64
	}
	if c.RecvPerPeer > c.RecvBuffers {
		c.RecvPerPeer = c.RecvBuffers
	}
	if c.MaxRecvBuffers <= 0 {
		c.MaxRecvBuffers = 8192
	}
	if c.MaxRecvBuffers < c.RecvBuffers {
		c.MaxRecvBuffers = c.RecvBuffers
	}
	if c.SendBuffers <= 0 {
		c.SendBuffers = 128
	}
	if c.SendDepth <= 0 {
		c.SendDepth = 64
	}
	if c.SendDepth > c.SendBuffers {
		c.SendDepth = c.SendBuffers
	}
	if c.RegCacheBytes <= 0 {
		c.RegCacheBytes = 256 << 20
	}
	if c.MaxRegions <= 0 {
		c.MaxRegions = 4096
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 5 * time.Second
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 100 * time.Millisecond
	}
	if c.PeerTimeout <= 0 {
		c.PeerTimeout = 10 * time.Second
	}
	if c.PeerTimeout < 4*c.KeepAlive {
		c.PeerTimeout = 4 * c.KeepAlive
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = 10 * time.Second
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = 14
	}
	if c.RetryCount == 0 {
		c.RetryCount = 3
	}
	if c.RNRRetry == 0 {
		c.RNRRetry = 7
	}
	if c.ReadMin <= 0 {
		c.ReadMin = DefaultReadMin
	}
	if c.ZeroCopyMin <= 0 {
		c.ZeroCopyMin = BufSize
	}
	return c
}

// Probe reports whether Listen(cfg) would find a device to open: nil, or an
// error matching ErrNoDevice or ErrUnsupportedProvider. It opens nothing.
func Probe(cfg Config) error {
	_, err := verbs.FindDevice(cfg.Sysfs, cfg.Device)
	return err
}
