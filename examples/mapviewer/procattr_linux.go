package main

import "syscall"

// procAttr starts pcorrun in its own process group, sent SIGTERM if this
// process dies first.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
