package udp

// Defaults used for the zero fields of a Config.
const (
	DefaultBatchSize  = 64
	DefaultBufferSize = 8 << 20
	// MaxBatchSize is the most datagrams one sendmmsg/recvmmsg call takes
	// (the kernel's UIO_MAXIOV).
	MaxBatchSize = 1024
)

// Config tunes a Port. The zero Config is ready to use.
type Config struct {
	// BatchSize is the number of datagrams per sendmmsg/recvmmsg call
	// (default DefaultBatchSize, at most MaxBatchSize).
	BatchSize int

	// RecvBuffer and SendBuffer are the socket buffer sizes asked for
	// (default DefaultBufferSize). As root the system limits are
	// overridden; otherwise the kernel caps them at rmem_max/wmem_max.
	RecvBuffer int
	SendBuffer int

	// DisableGSO stops Send from coalescing datagrams with UDP_SEGMENT.
	DisableGSO bool
	// DisableGRO stops the socket from receiving coalesced datagrams.
	DisableGRO bool

	// MTU, if non-zero, is taken as the link MTU toward every destination
	// (loopback included) instead of asking the kernel: MaxDatagram is
	// then MTU less the IP and UDP headers. Meant for tests.
	MTU int
}

func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.RecvBuffer == 0 {
		c.RecvBuffer = DefaultBufferSize
	}
	if c.SendBuffer == 0 {
		c.SendBuffer = DefaultBufferSize
	}
	return c
}
