//go:build linux

package shm

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestAllocHugePages checks that a large buffer from Alloc starts on a
// huge page and lies in memory marked for huge pages (the "hg" flag of
// its mapping in /proc/self/smaps), and that a small one is ordinary.
func TestAllocHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage"); err != nil {
		t.Skip("this kernel has no transparent huge pages")
	}
	p := &Port{}
	if b := p.Alloc(100); len(b) != 100 || cap(b) != 100 {
		t.Fatalf("Alloc(100): len %d cap %d", len(b), cap(b))
	}
	n := 2*hugePage + 5
	b := p.Alloc(n)
	if len(b) != n || cap(b) != n {
		t.Fatalf("Alloc(%d): len %d cap %d", n, len(b), cap(b))
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	if addr%hugePage != 0 {
		t.Fatalf("Alloc(%d) starts at %#x, not on a %d-byte boundary", n, addr, hugePage)
	}
	flags, err := vmFlags(addr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the mapping of a %d-byte buffer is not marked for huge pages (VmFlags: %s)", n, flags)
	}
}

// vmFlags returns the VmFlags line of the mapping holding addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) > 0 && !strings.HasSuffix(fields[0], ":") {
			// A mapping's first line: "lo-hi perms offset ...".
			var lo, hi uintptr
			if _, err := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi); err != nil {
				return "", fmt.Errorf("smaps line %q: %v", line, err)
			}
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), nil
		}
	}
	return "", fmt.Errorf("no mapping holds %#x", addr)
}
