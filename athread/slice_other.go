//go:build !linux

package athread

import "time"

// setThreadSlices does nothing where the kernel has no per-thread slice.
func setThreadSlices(d time.Duration, restore bool) int { return 0 }
