package main

import "syscall"

// procAttr starts pcorrun in its own process group, sent SIGTERM if this
// process dies first. (The kernel has been seen to deliver that signal
// twice, which pcorrun takes as "kill now": its processes still all end.)
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
