//go:build !linux

// Package osyield gives the CPU away from a thread that spins waiting: a
// thread that spins for a message, a completion or a helper must not keep
// the thread or the kernel work it waits for from running on its CPU.
package osyield

import "runtime"

// Yield gives the CPU to another goroutine (the operating system's
// threads are left to its scheduler).
func Yield() { runtime.Gosched() }
