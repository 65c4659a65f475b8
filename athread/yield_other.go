//go:build !linux

package athread

import "runtime"

// osYield gives the processor to another goroutine where the system's own
// yield is not used.
func osYield() { runtime.Gosched() }
