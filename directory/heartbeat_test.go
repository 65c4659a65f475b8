package directory

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary a directory member instead of a test run.
const childEnv = "DIRECTORY_TEST_JOIN"

func TestMain(m *testing.M) {
	if addr := os.Getenv(childEnv); addr != "" {
		os.Exit(runChild(addr))
	}
	os.Exit(m.Run())
}

// runChild joins the directory at addr, reports its id and waits to be
// killed.
func runChild(addr string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Join(ctx, addr, JoinRequest{JobKey: testKey, Proc: AnyProc})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("joined", c.Proc())
	<-c.Done()
	return 2
}

// rawJoin performs the handshake by hand on a connection that then never
// pings.
func rawJoin(t *testing.T, s *Server, proc uint32) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	b, _ := encodeMessage(&message{Type: msgJoin, Version: protoVersion, JobKey: testKey, Proc: &proc})
	if err := writeFrame(conn, b); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	b, err = readFrame(conn, DefaultMaxFrame)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := decodeMessage(b); err != nil || m.Type != msgWelcome {
		t.Fatalf("handshake answer %s %v", b, err)
	}
	return conn
}

// TestHeartbeatLossDetected: a member that never pings is announced as
// left (heartbeat lost), not before half the timeout; a live client that
// pings stays. The directory and the live client run in this process, so
// a stall of this process silences the client's pings and the
// directory's: a stall that ends just before a deadline is due cannot be
// told from silence (silenceReader), and on a loaded machine under the
// race detector this process was seen getting no CPU for 1.4 s. The live
// client's loss is therefore judged only when this process ran
// (stallWatch saw no gap of a quarter of the timeout); after such a stall
// the case is run again, at most five times.
func TestHeartbeatLossDetected(t *testing.T) {
	againAfterStalls(t, "the live client was lost", func() time.Duration { return heartbeatLoss(t, time.Second) })
}

// heartbeatLoss runs TestHeartbeatLossDetected's case once. It returns the
// longest stall of this process seen when the live client was lost in
// one, else 0.
func heartbeatLoss(t *testing.T, timeout time.Duration) time.Duration {
	watch := stallWatch()
	defer watch()
	s := startServer(t, ServerConfig{Size: 2, HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: timeout})
	defer s.Close()
	a := join(t, s, 0)
	defer a.Close()
	lost := func(what string) time.Duration {
		stall := watch()
		if stall < timeout/4 {
			t.Fatalf("%s: the live client was lost: %v (this process's longest stall %v)", what, a.Err(), stall)
		}
		return stall
	}
	rawJoin(t, s, 1)
	ev, open := awaitEvent(t, a, 10*time.Second)
	if !open {
		return lost("before the member joined")
	}
	if ev.Kind != Joined {
		t.Fatalf("got %+v", ev)
	}
	// The silence is counted afresh after each stall of this process, so
	// under load the member may be announced later than the timeout; the
	// bound only ends a wait for an announcement that never comes.
	start := time.Now()
	ev, open = awaitEvent(t, a, 30*time.Second)
	took := time.Since(start)
	if !open {
		return lost("before the member was announced as left")
	}
	if ev.Kind != Left || ev.Member.Proc != 1 || ev.Reason != ReasonHeartbeat {
		t.Fatalf("got %+v, want 1 left (heartbeat lost)", ev)
	}
	if took < timeout/2 {
		t.Fatalf("declared lost after %v, before the %v timeout", took, timeout)
	}
	t.Logf("silent member announced as left after %v (timeout %v)", took, timeout)
	// The live client pings, so it stays.
	select {
	case ev, open := <-a.Events():
		if !open {
			return lost("after the member left")
		}
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(3 * timeout):
	}
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	return 0
}

// TestStoppedProcessDetected freezes a real member process (SIGSTOP keeps
// its TCP connection open but silent) and expects it announced as left.
func TestStoppedProcessDetected(t *testing.T) {
	const timeout = time.Second
	s := startServer(t, ServerConfig{Size: 1, HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: timeout})
	a := join(t, s, 0)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+s.Addr().String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "joined 1") {
		t.Fatalf("child said %q, %v", line, err)
	}
	if ev := nextEvent(t, a, 2*time.Second); ev.Kind != Joined || ev.Member.Proc != 1 {
		t.Fatalf("got %+v", ev)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ev := nextEvent(t, a, timeout+3*time.Second)
	if ev.Kind != Left || ev.Member.Proc != 1 || ev.Reason != ReasonHeartbeat {
		t.Fatalf("got %+v, want 1 left (heartbeat lost)", ev)
	}
	t.Logf("stopped process announced as left after %v (timeout %v)", time.Since(start), timeout)
}

// TestKilledProcessDetected: a killed process's TCP session closes, which
// counts at once.
func TestKilledProcessDetected(t *testing.T) {
	s := startServer(t, ServerConfig{Size: 1, HeartbeatTimeout: 30 * time.Second})
	a := join(t, s, 0)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+s.Addr().String())
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, "joined") {
		t.Fatalf("child said %q, %v", line, err)
	}
	nextEvent(t, a, 2*time.Second)
	cmd.Process.Kill()
	ev := nextEvent(t, a, 3*time.Second)
	if ev.Kind != Left || ev.Reason != ReasonClosed {
		t.Fatalf("got %+v, want left (connection closed)", ev)
	}
}

func TestClientDetectsSilentServer(t *testing.T) {
	// A fake directory that welcomes and then says nothing.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		readFrame(c, DefaultMaxFrame)
		p := uint32(0)
		b, _ := encodeMessage(&message{Type: msgWelcome, Proc: &p, Interval: 50, Timeout: 300})
		writeFrame(c, b)
		io.Copy(io.Discard, c) // silent until the client hangs up
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := Join(ctx, ln.Addr().String(), JoinRequest{JobKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-c.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("client did not notice the silent directory")
	}
	if !strings.Contains(c.Err().Error(), "silent") {
		t.Fatalf("err %v", c.Err())
	}
}

// TestResetCountsAsClosed: a connection reset by its peer (as a killed
// process's is when data sat unread in its socket) is a closed
// connection.
func TestResetCountsAsClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.(*net.TCPConn).SetLinger(0) // close with a reset
	c.Close()
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = s.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after the peer's reset: %v", err)
	}
	if got := readFailure(err); got != ReasonClosed {
		t.Fatalf("reason %q, want %q", got, ReasonClosed)
	}
}
