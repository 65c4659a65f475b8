//go:build !linux

package engine

import "runtime"

// osYield gives the CPU to another goroutine (the operating system's
// threads are left to its scheduler).
func osYield() { runtime.Gosched() }
