//go:build !linux

package main

import "syscall"

// procAttr starts pcorrun in its own process group.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
