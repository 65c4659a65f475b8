//go:build linux

package shm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestReadShared checks a read shared by two threads (readShared): every
// byte of the message arrives, whichever thread read its chunk, nothing
// outside the destination is written, and a chunk that fails fails the
// read without holding it.
func TestReadShared(t *testing.T) {
	if !readsSelf() {
		t.Skip("this process may not read its own memory (process_vm_readv refused)")
	}
	sizes := []int{splitMin, splitMin + 1, 3*splitChunk - 1, 2<<20 + 12345}
	for round := 0; round < 20; round++ {
		for k, n := range sizes {
			src := positions(n, round*len(sizes)+k)
			buf := make([]byte, n+2)
			buf[0], buf[n+1] = 0xa5, 0x5a
			dst := buf[1 : n+1]
			if _, err := readShared(os.Getpid(), dst, addrOf(src)); err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			if !bytes.Equal(dst, src) {
				i := 0
				for i < n && dst[i] == src[i] {
					i++
				}
				t.Fatalf("%d bytes, round %d: first wrong byte at %d (chunk %d)", n, round, i, i/splitChunk)
			}
			if buf[0] != 0xa5 || buf[n+1] != 0x5a {
				t.Fatalf("%d bytes: written outside the destination", n)
			}
		}
	}

	// The last chunk of the source may not be read: the read fails.
	n := 4 * splitChunk
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[3*splitChunk:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	// (Whichever thread reads the failing chunk counts it done: a
	// read waiting for it forever fails the test, not its timeout.)
	for round := 0; round < 20; round++ {
		res := make(chan error, 1)
		go func() {
			_, err := readShared(os.Getpid(), make([]byte, n), addrOf(mem))
			res <- err
		}()
		select {
		case err := <-res:
			if err == nil {
				t.Fatal("a read of memory partly unreadable succeeded")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a read of memory partly unreadable did not end in 20 s")
		}
	}
}

// TestReadSharedAtOnce makes shared reads from several goroutines at
// once, of 512 KiB to 2.3 MiB (and one of 64 MiB), each into its own buffer: a helper that
// lingers after one read and takes chunks of another (the latest
// published) writes them into that read's buffer, every read waits for
// the chunks a helper took, and the helpers end once no read comes.
func TestReadSharedAtOnce(t *testing.T) {
	if !readsSelf() {
		t.Skip("this process may not read its own memory (process_vm_readv refused)")
	}
	sizes := []int{splitMin, splitMin + 1, 2 << 20, 2<<20 + 12345, 9*splitChunk + 7, 64 << 20}
	const readers, rounds = 3, 4
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for g := 0; g < readers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < rounds; round++ {
				for k, n := range sizes {
					if n > 4<<20 && (round != 0 || g != 0) {
						continue // 64 MiB once
					}
					seed := (g*rounds+round)*len(sizes) + k
					src := positions(n, seed)
					buf := make([]byte, n+2)
					buf[0], buf[n+1] = 0xa5, 0x5a
					dst := buf[1 : n+1]
					if _, err := readShared(os.Getpid(), dst, addrOf(src)); err != nil {
						errs <- fmt.Errorf("%d bytes: %v", n, err)
						return
					}
					if i := firstDiff(dst, src); i >= 0 {
						errs <- fmt.Errorf("reader %d, %d bytes, round %d: first wrong byte at %d (chunk %d)", g, n, round, i, i/splitChunk)
						return
					}
					if buf[0] != 0xa5 || buf[n+1] != 0x5a {
						errs <- fmt.Errorf("%d bytes: written outside the destination", n)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitHelpersEnd(t)
}

// waitHelpersEnd fails t unless every helper of the shared reads has
// ended within seconds.
func waitHelpersEnd(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for helpers.live.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d helpers of shared reads still alive 10 s after the last read", helpers.live.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if helpers.job.Load() != nil {
		t.Fatal("a read that has ended is still offered to helpers")
	}
}

// TestReadSharedSenderKilled reads 64 MiB over and over from another
// process, shared by two threads, and kills that process: a read fails
// within seconds (none waits for a chunk forever), the reads before were
// whole, and the helpers end.
func TestReadSharedSenderKilled(t *testing.T) {
	if !readsSelf() {
		t.Skip("this process may not read its own memory (process_vm_readv refused)")
	}
	const n = 64 << 20
	cmd, line := spawn(t, nil, "memory", "PCOR_SHM_TEST_SIZE="+strconv.Itoa(n))
	addr, err := strconv.ParseUint(line, 0, 64)
	if err != nil {
		t.Fatalf("memory peer printed %q", line)
	}
	want := positions(n, 7)
	dst := make([]byte, n)
	done := make(chan error, 1)
	reads := make(chan struct{}, 1)
	go func() {
		for i := 0; i < 10000; i++ {
			if _, err := readShared(cmd.Process.Pid, dst, addr); err != nil {
				done <- err
				return
			}
			if i := firstDiff(dst, want); i >= 0 {
				done <- fmt.Errorf("a whole read has a wrong byte at %d (chunk %d)", i, i/splitChunk)
				return
			}
			select {
			case reads <- struct{}{}:
			default:
			}
		}
		done <- nil
	}()
	select {
	case <-reads:
	case err := <-done:
		t.Fatalf("before the kill: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no read of 64 MiB ended in 30 s")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("10,000 reads from a killed process succeeded")
		}
		t.Logf("read from the killed process: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("a shared read from a killed process did not end in 20 s")
	}
	waitHelpersEnd(t)
}

// memoryPeer is the "memory" role: it fills PCOR_SHM_TEST_SIZE bytes with
// positions(size, 7), prints their address, and waits to be killed.
func memoryPeer() int {
	n, err := strconv.Atoi(os.Getenv("PCOR_SHM_TEST_SIZE"))
	if err != nil || n <= 0 {
		fmt.Fprintln(os.Stderr, "memory peer: bad PCOR_SHM_TEST_SIZE")
		return 2
	}
	b := positions(n, 7)
	fmt.Printf("READY %#x\n", addrOf(b))
	time.Sleep(time.Hour)
	fmt.Println(b[0]) // b stays alive
	return 0
}

// firstDiff is the first offset where a and b differ, or -1.
func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// readsSelf reports whether this process may read its own memory with
// process_vm_readv.
func readsSelf() bool {
	var src, dst uint64 = 42, 0
	err := readFrom(os.Getpid(), unsafe.Slice((*byte)(unsafe.Pointer(&dst)), 8), uint64(uintptr(unsafe.Pointer(&src))))
	return err == nil && dst == src
}

// addrOf is the address of b's first byte, as process_vm_readv takes it.
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// positions returns n bytes that tell their offset (a little-endian word
// of offset and seed every 4 bytes): a chunk read from or into the wrong
// place shows.
func positions(n, seed int) []byte {
	b := make([]byte, n+3)
	for i := 0; i < n; i += 4 {
		binary.LittleEndian.PutUint32(b[i:], uint32(i*2654435761)^uint32(seed))
	}
	return b[:n]
}
