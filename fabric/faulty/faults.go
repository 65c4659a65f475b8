package faulty

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Default hold times for reordered datagrams.
const (
	// DefaultReorderAfter is the number of datagrams a reordered datagram
	// waits for when Faults.ReorderAfter is zero.
	DefaultReorderAfter = 1
	// DefaultReorderDelay is the longest a reordered datagram is held when
	// Faults.ReorderDelay is zero.
	DefaultReorderDelay = time.Millisecond
)

// ErrInvalidFaults is wrapped by the errors of Faults.Validate.
var ErrInvalidFaults = errors.New("faulty: invalid faults")

// Faults says which faults a Port injects into outgoing datagrams. The zero
// value injects none. Probabilities are in [0, 1].
type Faults struct {
	// Seed seeds the random stream all decisions are drawn from.
	Seed uint64

	// Loss is the probability that a datagram is dropped.
	Loss float64
	// Duplicate is the probability that a datagram is sent twice.
	Duplicate float64
	// Corrupt is the probability that one bit of a datagram is flipped.
	Corrupt float64

	// Reorder is the probability that a datagram is held back.
	Reorder float64
	// ReorderAfter is the number of later datagrams a held datagram lets
	// pass before it goes (DefaultReorderAfter when zero).
	ReorderAfter int
	// ReorderDelay is the longest a held datagram waits for them
	// (DefaultReorderDelay when zero).
	ReorderDelay time.Duration

	// Delay is added to every datagram's departure.
	Delay time.Duration
	// Jitter is the upper bound of a uniform random delay added on top.
	Jitter time.Duration
}

// Validate reports the first field out of range, wrapping ErrInvalidFaults.
func (f Faults) Validate() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"Loss", f.Loss}, {"Duplicate", f.Duplicate}, {"Corrupt", f.Corrupt}, {"Reorder", f.Reorder}} {
		if math.IsNaN(p.v) || p.v < 0 || p.v > 1 {
			return fmt.Errorf("%w: %s = %v, want a probability in [0, 1]", ErrInvalidFaults, p.name, p.v)
		}
	}
	if f.ReorderAfter < 0 {
		return fmt.Errorf("%w: ReorderAfter = %d, want >= 0", ErrInvalidFaults, f.ReorderAfter)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ReorderDelay", f.ReorderDelay}, {"Delay", f.Delay}, {"Jitter", f.Jitter}} {
		if d.v < 0 {
			return fmt.Errorf("%w: %s = %v, want >= 0", ErrInvalidFaults, d.name, d.v)
		}
	}
	return nil
}

// normalized returns f with values out of range clamped and defaults filled.
func (f Faults) normalized() Faults {
	clamp := func(p float64) float64 {
		switch {
		case math.IsNaN(p) || p < 0:
			return 0
		case p > 1:
			return 1
		}
		return p
	}
	f.Loss = clamp(f.Loss)
	f.Duplicate = clamp(f.Duplicate)
	f.Corrupt = clamp(f.Corrupt)
	f.Reorder = clamp(f.Reorder)
	if f.ReorderAfter <= 0 {
		f.ReorderAfter = DefaultReorderAfter
	}
	if f.ReorderDelay <= 0 {
		f.ReorderDelay = DefaultReorderDelay
	}
	f.Delay = max(f.Delay, 0)
	f.Jitter = max(f.Jitter, 0)
	return f
}
