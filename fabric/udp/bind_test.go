//go:build linux

package udp

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBindPortZeroUnique binds many sockets to port 0 at once: each must
// get a port of its own. Were port 0 bound with SO_REUSEPORT, the kernel
// would hand out ports other sockets of this user hold (tens in a
// thousand), and a process would receive another's datagrams.
func TestBindPortZeroUnique(t *testing.T) {
	const n = 1000
	seen := make(map[int]bool, n)
	fds := make([]int, 0, n)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i := 0; i < n; i++ {
		fd, err := bind("127.0.0.1:0")
		if err != nil {
			t.Fatalf("socket %d: %v", i, err)
		}
		fds = append(fds, fd)
		sa, err := unix.Getsockname(fd)
		if err != nil {
			t.Fatal(err)
		}
		port := sa.(*unix.SockaddrInet4).Port
		if seen[port] {
			t.Fatalf("socket %d got port %d, which another open socket holds", i, port)
		}
		seen[port] = true
	}
}

// freeAddr is a loopback address whose port nothing held a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	fd, err := bind("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
}
