//go:build linux

package shm

import (
	"bytes"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// TestReadRemoteReturnsAtOnce checks that ReadRemote queues its read
// instead of making it on the calling goroutine (the engine's dispatcher,
// which would hold the port for as long as the copy takes): with every
// read held back (readGate), ReadRemote returns; the reads then end in
// order with the sender's bytes, and those still queued when the port
// closes fail, so that no reading goroutine outlives Close.
func TestReadRemoteReturnsAtOnce(t *testing.T) {
	dir := testDir(t)
	a, b := listen(t, dir, "a", Config{}), listen(t, dir, "b", Config{})
	// b reads a's probe when a's first datagram comes.
	if _, err := a.Send([]fabric.Datagram{{Body: []byte{1}, To: b.LocalEndpoint()}}); err != nil {
		t.Fatal(err)
	}
	recvN(t, b, 1)
	if !a.ReadableBy(b.LocalEndpoint()) {
		t.Skip("this process may not read its own memory (process_vm_readv refused)")
	}
	const n = 4
	src := make([][]byte, n)
	descs := make([][]byte, n)
	for i := range src {
		src[i] = pattern(1<<20, i)
		d, release, err := a.Expose(src[i])
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		descs[i] = d
	}
	gate := make(chan struct{})
	readGate = gate
	defer func() { readGate = nil }()

	type result struct {
		i   int
		err error
	}
	results := make(chan result, n)
	dst := make([][]byte, n)
	queued := make(chan error, 1)
	go func() {
		for i := 0; i < n-1; i++ {
			dst[i] = make([]byte, len(src[i]))
			i := i
			if err := b.ReadRemote(a.LocalEndpoint(), dst[i], descs[i], func(err error) { results <- result{i, err} }); err != nil {
				queued <- err
				return
			}
		}
		queued <- nil
	}()
	select {
	case err := <-queued:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(gate) // let the test end
		t.Fatal("ReadRemote did not return while its read was held back: it reads on the calling goroutine")
	}
	// Two reads go through; the third, held at the gate while the port
	// closes, still ends; none is queued after Close.
	for i := 0; i < 2; i++ {
		gate <- struct{}{}
		select {
		case r := <-results:
			if r.i != i || r.err != nil {
				t.Fatalf("read %d ended as read %d, %v", i, r.i, r.err)
			}
			if !bytes.Equal(dst[i], src[i]) {
				t.Fatalf("read %d: wrong bytes", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("read %d never ended", i)
		}
	}
	b.Close()
	close(gate)
	dst[n-1] = make([]byte, len(src[n-1]))
	if err := b.ReadRemote(a.LocalEndpoint(), dst[n-1], descs[n-1], func(err error) { results <- result{n - 1, err} }); err == nil {
		t.Error("ReadRemote on a closed port queued a read")
	}
	select {
	case r := <-results:
		if r.i != 2 {
			t.Fatalf("read %d ended, want read 2", r.i)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read queued before Close never ended")
	}
	// The reading goroutine ends once the queue is empty.
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.reads.mu.Lock()
		running := b.reads.running
		b.reads.mu.Unlock()
		if !running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reading goroutine outlived Close")
		}
		time.Sleep(time.Millisecond)
	}
}
