package pcor_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/pcor"
)

// memberPeer is process 1 of TestPeerDownAnnounced: it joins the directory
// at PCOR_TEST_COORD, says hello to process 0 and waits to be killed.
func memberPeer() int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := pcor.Join(ctx, pcor.JoinConfig{Coord: os.Getenv("PCOR_TEST_COORD"), JobKey: jobKey, Rank: 1,
		Directory: directory.ServeNever})
	if err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 1
	}
	defer n.Close()
	if err := n.NewThread().Send(ctx, pcor.Addr{Proc: 0, Thread: 0}, 1, []byte("hello")); err != nil {
		fmt.Fprintln(os.Stderr, "member:", err)
		return 1
	}
	fmt.Println("SENT")
	<-ctx.Done()
	return 0
}

// When the directory announces a process gone (here: killed), every call
// addressed to it fails with ErrPeerDown within the announcement delay:
// receives and probes already waiting, and sends, receives and probes made
// afterwards. A wildcard receive is not affected.
func TestPeerDownAnnounced(t *testing.T) {
	coord, err := freeTCP()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := pcor.Join(ctx, pcor.JoinConfig{Coord: coord, JobKey: jobKey, Size: 2, Directory: directory.ServeEmbed,
		Listen: []pcor.Listen{{Addr: "127.0.0.1:0"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	cmd, out := spawn(t, nil, "member", "PCOR_TEST_COORD="+coord)
	th := n.Thread(0)
	if m, err := th.Recv(ctx, pcor.Addr{Proc: 1, Thread: 0}, 1); err != nil || string(m.Data) != "hello" {
		t.Fatalf("hello: %q %v", m.Data, err)
	}
	if line, err := out.ReadString('\n'); err != nil || line != "SENT\n" {
		t.Fatalf("member: %q %v", line, err)
	}
	gone := pcor.Addr{Proc: 1, Thread: 0}
	waitingRecv := n.NewThread().Irecv(gone, 2, nil)
	probed := make(chan error, 1)
	go func() {
		_, err := n.NewThread().Probe(ctx, gone, 3)
		probed <- err
	}()
	wild := n.NewThread()
	wildRecv := wild.Irecv(pcor.Any, 4, nil)
	time.Sleep(50 * time.Millisecond)

	killed := time.Now()
	cmd.Process.Kill()
	cmd.Wait()
	const delay = 3 * time.Second // the directory sees the session end at once
	wctx, wcancel := context.WithTimeout(ctx, delay)
	defer wcancel()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, pcor.ErrPeerDown) {
			t.Errorf("%s: %v, want ErrPeerDown", what, err)
		}
	}
	check("receive waiting when the process died", waitingRecv.Wait(wctx))
	select {
	case err := <-probed:
		check("probe waiting when the process died", err)
	case <-wctx.Done():
		t.Errorf("probe waiting when the process died: still waiting %v after the kill", delay)
	}
	t.Logf("waiting calls failed %v after the kill", time.Since(killed).Round(time.Millisecond))
	// Calls made after the announcement fail at once.
	th2 := n.NewThread()
	check("send", th2.Send(wctx, gone, 5, []byte("x")))
	check("isend", th2.Isend(gone, 5, []byte("x")).Wait(wctx))
	_, err = th2.Recv(wctx, gone, 6)
	check("recv", err)
	_, err = th2.Probe(wctx, gone, 7)
	check("probe", err)
	if d := time.Since(killed); d > delay {
		t.Errorf("the calls took %v after the kill", d)
	}
	// The wildcard receive still waits, and takes the next message.
	if done, err := wildRecv.Test(); done {
		t.Fatalf("the wildcard receive ended: %v", err)
	}
	if err := th.Send(ctx, wild.Addr(), 4, []byte("local")); err != nil {
		t.Fatal(err)
	}
	if err := wildRecv.Wait(ctx); err != nil || string(wildRecv.Message().Data) != "local" {
		t.Fatalf("wildcard receive: %q %v", wildRecv.Message().Data, err)
	}
	if !strings.Contains(fmt.Sprint(th2.Send(wctx, gone, 5, nil)), "1") {
		t.Error("the error does not name process 1")
	}
}

// freeTCP finds a free loopback TCP address.
func freeTCP() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
