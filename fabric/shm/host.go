package shm

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/cespare/xxhash/v2"
)

// HostID identifies the shared memory this process sees in dir: two
// processes with equal HostIDs map the same files. It combines the kernel's
// boot id, the device and inode of dir and the pid namespace, so that
// network namespaces on one host agree while containers with their own
// tmpfs or pid namespace do not.
func HostID(dir string) (string, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("shm: boot id: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return "", fmt.Errorf("shm: %s: %w", dir, err)
	}
	// Liveness checks read /proc by pid, so peers must share a pid namespace.
	pidns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "", fmt.Errorf("shm: pid namespace: %w", err)
	}
	id := fmt.Sprintf("%s/%d/%d/%s", strings.TrimSpace(string(boot)), st.Dev, st.Ino, pidns)
	return fmt.Sprintf("%016x", xxhash.Sum64String(id)), nil
}
