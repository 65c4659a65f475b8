package verbs

// BaselineConfig selects the device and the transport parameters of a
// raw verbs baseline. The zero value picks the first supported device,
// port 1, and the same QP timeouts as the RDMA fabric's defaults.
type BaselineConfig struct {
	Sysfs  string // sysfs mount; default /sys
	Device string // ib device name; default the first supported one
	Port   uint8  // device port; default 1

	AckTimeout uint8 // QP ACK timeout exponent, 4.096µs·2^n; default 16
	RetryCount uint8 // transport retries; default 7
	RNRRetry   uint8 // receiver-not-ready retries, 7 = forever; default 7
}

func (c BaselineConfig) withDefaults() BaselineConfig {
	if c.Port == 0 {
		c.Port = 1
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = 16
	}
	if c.RetryCount == 0 {
		c.RetryCount = 7
	}
	if c.RNRRetry == 0 {
		c.RNRRetry = 7
	}
	return c
}
