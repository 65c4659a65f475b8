//go:build race || !(amd64 || arm64 || loong64 || mips64 || mips64le || ppc64 || ppc64le || riscv64 || s390x)

package tally

import "sync/atomic"

// Counter is a count one thread at a time adds to (see the package
// comment). The zero value is 0.
type Counter struct {
	v      atomic.Uint64
	shadow uint64 // written plainly: unordered writers are a race
}

// Add adds n. Callers that add are ordered (one at a time).
func (c *Counter) Add(n uint64) {
	c.shadow++
	c.v.Add(n)
}

// Load returns the count, from any thread.
func (c *Counter) Load() uint64 { return c.v.Load() }

// Flag is a boolean one thread at a time sets (see the package comment).
type Flag struct {
	v      atomic.Bool
	shadow bool // written plainly: unordered writers are a race
}

// Store sets the flag. Callers that store are ordered (one at a time).
func (f *Flag) Store(b bool) {
	f.shadow = b
	f.v.Store(b)
}

// Load returns the flag, from any thread.
func (f *Flag) Load() bool { return f.v.Load() }
