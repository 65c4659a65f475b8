//go:build unix

package testdir

import (
	"errors"
	"syscall"
)

// alive reports whether process pid exists (a zombie counts).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
