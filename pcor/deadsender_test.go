package pcor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// halfSenderPeer is process 0 of TestDeadSenderMidMessage: it sends one
// message of PCOR_TEST_SIZE bytes to process 1 and waits to be killed.
func halfSenderPeer() int {
	size, _ := strconv.Atoi(os.Getenv("PCOR_TEST_SIZE"))
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey,
		Peers: []pcor.Peer{{Proc: 1, Addr: os.Getenv("PCOR_TEST_PEER")}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer n.Close()
	fmt.Printf("ADDR %s\n", n.Endpoints()[0].Addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n.NewThread().Send(ctx, pcor.Addr{Proc: 1, Thread: 0}, 1, make([]byte, size))
	<-ctx.Done()
	return 0
}

// A receive waiting on the fragments of a message whose sender was killed
// half-way fails with ErrUnreachable within the unreachable timeout, and
// what the partial message held is freed: with the receive posted before
// the message came (fragments go straight into its buffer), and with no
// receive posted (the fragments are held in the receive budget).
func TestDeadSenderMidMessage(t *testing.T) {
	for _, posted := range []bool{true, false} {
		t.Run(fmt.Sprintf("posted=%v", posted), func(t *testing.T) { deadSender(t, posted) })
	}
}

// deadSender kills the sender once the message has started. A loaded
// machine may run the test's poll late enough for the whole message to
// arrive before the kill (over 200 MiB of the 256 have been seen); such an
// attempt shows nothing and is made again, a bounded number of times.
func deadSender(t *testing.T, posted bool) {
	const attempts = 5
	for i := 0; i < attempts; i++ {
		if !deadSenderOnce(t, posted) {
			return
		}
		t.Logf("attempt %d: the whole message arrived before the kill", i+1)
	}
	t.Fatalf("the whole message arrived before the kill in %d attempts", attempts)
}

// deadSenderOnce reports whether the whole message arrived before the
// sender was killed (the receive then succeeds, and nothing is shown).
func deadSenderOnce(t *testing.T, posted bool) (whole bool) {
	const size = 256 << 20
	const timeout = time.Second
	c, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey, UnreachableTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd, _ := startPeer(t, "halfsender", c, pcor.Peer{Proc: 0}, "PCOR_TEST_SIZE="+strconv.Itoa(size))
	th := c.NewThread()
	src := pcor.Addr{Proc: 0, Thread: 0}
	var r *pcor.Request
	if posted {
		r = th.Irecv(src, 1, make([]byte, size))
	}
	for deadline := time.Now().Add(time.Minute); c.Stats()[0].BytesRecv < 8<<20; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the message did not start: %d bytes", c.Stats()[0].BytesRecv)
		}
	}
	cmd.Process.Kill()
	if !posted {
		// The receive comes after the sender died, while the partial
		// message is still held.
		r = th.Irecv(src, 1, make([]byte, size))
	}
	// The silence starts with the last datagram the node took in (a
	// loaded receiver may still be reading its socket's backlog after
	// the kill): the receive must fail within the unreachable timeout of
	// it.
	got, last := c.Stats()[0].BytesRecv, time.Now()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if done, _ := r.Test(); done || time.Now().After(deadline) {
			break
		}
		if n := c.Stats()[0].BytesRecv; n != got {
			got, last = n, time.Now()
		}
	}
	done, err := r.Test()
	took := time.Since(last)
	if done && err == nil {
		cmd.Wait()
		return true
	}
	var ue *pcor.UnreachableError
	if !errors.Is(err, pcor.ErrUnreachable) || !errors.As(err, &ue) || ue.Proc != 0 {
		t.Fatalf("receive of a message whose sender died after %d of %d bytes: %v %v after the last datagram, want ErrUnreachable", got, size, err, took)
	}
	cmd.Wait()
	if got >= size {
		t.Fatalf("the whole message arrived before the kill")
	}
	if took > timeout+3*time.Second {
		t.Errorf("the receive failed %v after the last datagram (unreachable timeout %v)", took, timeout)
	}
	t.Logf("after %d MiB of %d: %v, %v after the last datagram", got>>20, size>>20, err, took.Round(time.Millisecond))
	for deadline := time.Now().Add(3 * time.Second); c.BudgetUsed() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the partial message still holds %d bytes of the receive budget", c.BudgetUsed())
		}
	}
	return false
}
