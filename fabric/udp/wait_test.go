//go:build linux

package udp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric"
)

type waitResult struct {
	n   int
	err error
	at  time.Time
}

func waitAsync(p *Port, msgs [][]byte, deadline time.Time) chan waitResult {
	c := make(chan waitResult, 1)
	go func() {
		n, err := p.Wait(msgs, deadline)
		c <- waitResult{n, err, time.Now()}
	}()
	return c
}

func mustNotReturn(t *testing.T, c chan waitResult, d time.Duration) {
	t.Helper()
	select {
	case r := <-c:
		t.Fatalf("Wait returned early: %d, %v", r.n, r.err)
	case <-time.After(d):
	}
}

func mustReturn(t *testing.T, c chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return")
	}
	return waitResult{}
}

func TestWaitInterrupt(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "0.0.0.0:0", "[::1]:0", "[::]:0"} {
		p, err := Listen(addr, Config{})
		if err != nil {
			t.Logf("%s: %v", addr, err)
			continue
		}
		msgs := make([][]byte, 4)
		c := waitAsync(p, msgs, time.Time{})
		mustNotReturn(t, c, 30*time.Millisecond)
		if err := p.Interrupt(); err != nil {
			t.Fatalf("%s: Interrupt: %v", addr, err)
		}
		if r := mustReturn(t, c); r.n != 0 || r.err != nil {
			t.Fatalf("%s: interrupted Wait = %d, %v; want 0, nil", addr, r.n, r.err)
		}
		// An interrupt sent before the wait ends the next one.
		p.Interrupt()
		if n, err := p.Wait(msgs, time.Now().Add(5*time.Second)); n != 0 || err != nil {
			t.Fatalf("%s: Wait after Interrupt = %d, %v", addr, n, err)
		}
		// It is gone once taken.
		if n, err := p.Wait(msgs, time.Now().Add(20*time.Millisecond)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: second Wait = %d, %v; want the deadline", addr, n, err)
		}
		// Receive and Poll never hand an interrupt over.
		p.Interrupt()
		if n, err := p.Poll(msgs); n != 0 || err != nil {
			t.Fatalf("%s: Poll with an interrupt queued = %d, %v", addr, n, err)
		}
		if st := p.Stats(); st.Interrupts != 3 || st.RecvDatagrams != 0 {
			t.Errorf("%s: stats %+v", addr, st)
		}
		p.Close()
	}
}

func TestWaitData(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	msgs := make([][]byte, 8)
	c := waitAsync(b, msgs, time.Time{})
	mustNotReturn(t, c, 20*time.Millisecond)
	// An empty datagram from another socket is data, not an interrupt.
	to := endpoint(t, b)
	dgs := []fabric.Datagram{{To: to}, {Body: []byte("x"), To: to}}
	if _, err := a.Send(dgs); err != nil {
		t.Fatal(err)
	}
	r := mustReturn(t, c)
	if r.err != nil || r.n < 1 {
		t.Fatalf("Wait = %d, %v", r.n, r.err)
	}
	got := append([][]byte(nil), msgs[:r.n]...)
	if r.n < 2 {
		rest := receiveN(t, b, 1, 5*time.Second)
		got = append(got, rest...)
	}
	checkSame(t, dgs, got)
}

// TestInterruptToken: only a datagram holding the port's own token is an
// interrupt; one of the token's size with other bytes (another port's
// token among them), from any socket, is data, and so is the token of the
// port inside a longer datagram.
func TestInterruptToken(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	to := endpoint(t, b)
	other := a.token
	other[0] ^= 1
	dgs := []fabric.Datagram{
		{Head: a.token[:], To: to},                                  // a's token: data to b
		{Head: other[:], To: to},                                    // token-sized
		{Head: b.token[:tokenSize-1], To: to},                       // b's token, short
		{Head: b.token[:], Body: []byte{0}, To: to},                 // b's token, and more
		{Head: b.token[:8], Body: b.token[8:], To: to},              // b's token: an interrupt
		{Head: make([]byte, tokenSize), To: to},                     // zeros
		{Head: append([]byte{^b.token[0]}, b.token[1:]...), To: to}, // b's token but its first byte
	}
	for _, d := range dgs {
		if _, err := a.Send([]fabric.Datagram{d}); err != nil {
			t.Fatal(err)
		}
	}
	want := append(append([]fabric.Datagram(nil), dgs[:4]...), dgs[5:]...)
	checkSame(t, want, receiveN(t, b, len(want), 5*time.Second))
	if n, err := b.Poll(make([][]byte, 8)); n != 0 || err != nil {
		t.Fatalf("Poll after the data = %d, %v; want nothing", n, err)
	}
	if a.token == b.token {
		t.Error("two ports drew the same token")
	}
	// A lead (Lead) is not shown an interrupt.
	var shown [][]byte
	b.Lead(func(dg []byte, n int) { shown = append(shown, bytes.Clone(dg)) })
	b.Interrupt()
	if n, err := b.Poll(make([][]byte, 8)); n != 0 || err != nil {
		t.Fatalf("Poll of an interrupt = %d, %v", n, err)
	}
	b.Lead(nil)
	if len(shown) != 0 {
		t.Errorf("the lead was shown %q", shown)
	}
}

func TestWaitDeadline(t *testing.T) {
	p := listen(t, "127.0.0.1:0", Config{})
	start := time.Now()
	_, err := p.Wait(make([][]byte, 1), start.Add(30*time.Millisecond))
	el := time.Since(start)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Wait = %v, want os.ErrDeadlineExceeded", err)
	}
	if el < 30*time.Millisecond || el > 3*time.Second {
		t.Errorf("Wait returned after %v for a 30ms deadline", el)
	}
	if _, err := p.Wait(make([][]byte, 1), time.Now().Add(-time.Second)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Wait past its deadline = %v", err)
	}
	// A later Wait without a deadline is not cut short by the old one.
	c := waitAsync(p, make([][]byte, 1), time.Time{})
	mustNotReturn(t, c, 60*time.Millisecond)
	p.Interrupt()
	mustReturn(t, c)
}

func TestReceiveDeadlineMovedWhileBlocked(t *testing.T) {
	p := listen(t, "127.0.0.1:0", Config{})
	errc := make(chan error, 1)
	go func() {
		_, err := p.Receive(make([][]byte, 1))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	p.SetReceiveDeadline(time.Now().Add(20 * time.Millisecond))
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Receive = %v, want os.ErrDeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("moving the deadline did not end a blocked Receive")
	}
}

func TestCloseUnblocksWait(t *testing.T) {
	before := runtime.NumGoroutine()
	p, err := Listen("127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := waitAsync(p, make([][]byte, 2), time.Time{})
	mustNotReturn(t, c, 30*time.Millisecond)
	p.Close()
	if r := mustReturn(t, c); !errors.Is(r.err, fabric.ErrClosed) {
		t.Fatalf("Wait after Close = %d, %v", r.n, r.err)
	}
	if _, err := p.Wait(make([][]byte, 1), time.Time{}); !errors.Is(err, fabric.ErrClosed) {
		t.Errorf("Wait on a closed port = %v", err)
	}
	if err := p.Interrupt(); !errors.Is(err, fabric.ErrClosed) {
		t.Errorf("Interrupt on a closed port = %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d after Close, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRecvOverflowsCounted(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{DisableGSO: true})
	b := listen(t, "127.0.0.1:0", Config{RecvBuffer: 4096, DisableGRO: true})
	to := endpoint(t, b)
	body := make([]byte, 1000)
	dgs := make([]fabric.Datagram, 64)
	for i := range dgs {
		dgs[i] = fabric.Datagram{Body: body, To: to}
	}
	if _, err := a.Send(dgs); err != nil {
		t.Fatal(err)
	}
	// The count comes with datagrams queued after the drops: drain, then
	// send one more.
	if len(receiveN(t, b, 1, 5*time.Second)) == 0 {
		t.Fatal("nothing received")
	}
	msgs := make([][]byte, 64)
	for {
		n, err := b.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if _, err := a.Send(dgs[:1]); err != nil {
		t.Fatal(err)
	}
	receiveN(t, b, 1, 5*time.Second)
	if st := b.Stats(); st.RecvOverflows == 0 {
		t.Errorf("64 KB into a 4 KB buffer, yet no overflow counted: %+v", st)
	}
}

func TestParkInterrupt(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	msgs := make([][]byte, 4)
	c := make(chan waitResult, 1)
	go func() {
		n, err := b.Park(msgs)
		c <- waitResult{n, err, time.Now()}
	}()
	mustNotReturn(t, c, 30*time.Millisecond)
	b.Interrupt()
	if r := mustReturn(t, c); r.n != 0 || r.err != nil {
		t.Fatalf("interrupted Park = %d, %v", r.n, r.err)
	}
	if _, err := a.Send([]fabric.Datagram{{Body: []byte("p"), To: endpoint(t, b)}}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Park(msgs); n != 1 || err != nil || string(msgs[0]) != "p" {
		t.Fatalf("Park = %d, %v", n, err)
	}
	b.SetReceiveDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := b.Park(msgs); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Park past the deadline = %v", err)
	}
}

// While a thread drives the port with Wait, the socket is out of the
// poller that Receive and Park wait in; they put it back.
func TestWaitLeavesPoller(t *testing.T) {
	p := listen(t, "127.0.0.1:0", Config{})
	msgs := make([][]byte, 1)
	if !p.pl.on {
		t.Fatal("a new port is not watched")
	}
	p.Wait(msgs, time.Now().Add(time.Millisecond))
	if p.pl.on {
		t.Fatal("still watched after Wait")
	}
	p.SetReceiveDeadline(time.Now().Add(time.Millisecond))
	p.Receive(msgs)
	if !p.pl.on {
		t.Fatal("not watched after Receive")
	}
	// A datagram that comes while the socket is out of the poller still
	// wakes a Receive that starts afterwards.
	p.Wait(msgs, time.Now().Add(time.Millisecond))
	a := listen(t, "127.0.0.1:0", Config{})
	a.Send([]fabric.Datagram{{Body: []byte("late"), To: endpoint(t, p)}})
	time.Sleep(10 * time.Millisecond)
	p.SetReceiveDeadline(time.Now().Add(5 * time.Second))
	if n, err := p.Receive(msgs); n != 1 || err != nil {
		t.Fatalf("Receive after Wait = %d, %v", n, err)
	}
}

// A port being polled is out of the runtime's poller too: a datagram that
// arrives then leaves the port's epoll instance quiet, so that it wakes no
// poller thread (which would take a CPU from the polling thread). Receive
// after Poll still sees the datagram.
func TestPollLeavesPoller(t *testing.T) {
	p := listen(t, "127.0.0.1:0", Config{})
	msgs := make([][]byte, 1)
	if n, err := p.Poll(msgs); n != 0 || err != nil {
		t.Fatalf("Poll of an empty port = %d, %v", n, err)
	}
	a := listen(t, "127.0.0.1:0", Config{})
	a.Send([]fabric.Datagram{{Body: []byte("polled"), To: endpoint(t, p)}})
	ev := make([]unix.EpollEvent, 1)
	deadline := time.Now().Add(10 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n, _ := unix.EpollWait(p.pl.epfd, ev, 1); n > 0 {
			t.Fatal("the poller's instance became readable while the port was polled")
		}
	}
	p.SetReceiveDeadline(time.Now().Add(5 * time.Second))
	if n, err := p.Receive(msgs); n != 1 || err != nil || string(msgs[0]) != "polled" {
		t.Fatalf("Receive after Poll = %d, %v", n, err)
	}
	if !p.pl.on {
		t.Fatal("not watched after Receive")
	}
}

// epollTargets lists the descriptors the epoll instance epfd watches, as
// /proc/self/fdinfo shows them.
func epollTargets(t *testing.T, epfd int) []int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", epfd))
	if err != nil {
		t.Skipf("no fdinfo: %v", err)
	}
	var fds []int
	for _, line := range strings.Split(string(b), "\n") {
		var fd int
		if _, err := fmt.Sscanf(line, "tfd: %d", &fd); err == nil {
			fds = append(fds, fd)
		}
	}
	return fds
}

// While the port is polled or waited on, its socket is removed from the
// private epoll instance, not left in it with no events: an entry with no
// events still sits on the socket's wait queue, and every datagram sent
// or received then runs the epoll callback (a tenth of a small send on
// loopback). Receive puts it back.
func TestPolledSocketOffWaitQueue(t *testing.T) {
	p := listen(t, "127.0.0.1:0", Config{})
	if got := epollTargets(t, p.pl.epfd); len(got) != 1 || got[0] != p.fd {
		t.Fatalf("a new port's instance watches %v, want [%d]", got, p.fd)
	}
	msgs := make([][]byte, 1)
	if _, err := p.Poll(msgs); err != nil {
		t.Fatal(err)
	}
	if got := epollTargets(t, p.pl.epfd); len(got) != 0 {
		t.Fatalf("while polled the instance still holds %v", got)
	}
	p.Wait(msgs, time.Now().Add(time.Millisecond))
	if got := epollTargets(t, p.pl.epfd); len(got) != 0 {
		t.Fatalf("after Wait the instance still holds %v", got)
	}
	p.SetReceiveDeadline(time.Now().Add(time.Millisecond))
	p.Receive(msgs)
	if got := epollTargets(t, p.pl.epfd); len(got) != 1 || got[0] != p.fd {
		t.Fatalf("after Receive the instance watches %v, want [%d]", got, p.fd)
	}
}

// TestEmptyPollResetsNoHeader: an empty Poll leaves no receive header for
// the next to reset (the kernel writes none back when it finds nothing),
// and the headers a Poll that found datagrams left are reset before the
// next look, which then receives as usual.
func TestEmptyPollResetsNoHeader(t *testing.T) {
	p := listen(t, "127.0.0.1:0", Config{})
	msgs := make([][]byte, p.BatchSize())
	for range 3 {
		if n, err := p.Poll(msgs); n != 0 || err != nil {
			t.Fatalf("Poll of an empty port = %d, %v", n, err)
		}
		if p.rx.dirty != 0 {
			t.Fatalf("an empty Poll left %d headers to reset", p.rx.dirty)
		}
	}
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	for round, from := range []*Port{a, b, a} {
		want := fmt.Sprintf("round %d", round)
		from.Send([]fabric.Datagram{{Body: []byte(want), To: endpoint(t, p)}})
		got := 0
		for deadline := time.Now().Add(5 * time.Second); got == 0 && time.Now().Before(deadline); {
			n, err := p.Poll(msgs)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 && p.rx.dirty != 0 {
				t.Fatalf("an empty Poll left %d headers to reset", p.rx.dirty)
			}
			if n > 0 {
				if n != 1 || string(msgs[0]) != want {
					t.Fatalf("round %d: Poll = %d datagrams, first %q", round, n, msgs[0])
				}
				got = n
			}
		}
		if got == 0 {
			t.Fatalf("round %d: the datagram never came", round)
		}
	}
}

// TestRecvOffersWhatComes: a port receiving one datagram at a time, with
// empty looks between (a polling ping-pong), offers recvmmsg one buffer,
// so that the call does not look for a second datagram; a backlog grows
// the offer back to the whole batch.
func TestRecvOffersWhatComes(t *testing.T) {
	p := listen(t, "127.0.0.1:0", Config{})
	a := listen(t, "127.0.0.1:0", Config{})
	to := endpoint(t, p)
	msgs := make([][]byte, p.BatchSize())
	poll := func(want int) {
		t.Helper()
		got := 0
		for deadline := time.Now().Add(5 * time.Second); got < want && time.Now().Before(deadline); {
			n, err := p.Poll(msgs)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
		if got != want {
			t.Fatalf("received %d datagrams of %d", got, want)
		}
	}
	for i := range 20 {
		a.Send([]fabric.Datagram{{Body: []byte("ping"), To: to}})
		poll(1)
		if n, err := p.Poll(msgs); n != 0 || err != nil { // the wait for the next
			t.Fatalf("Poll of an empty port = %d, %v", n, err)
		}
		if p.rx.want > 1 {
			t.Fatalf("after %d single datagrams recvmmsg is offered %d buffers", i+1, p.rx.want)
		}
	}
	const burst = 100
	for range burst {
		a.Send([]fabric.Datagram{{Body: []byte("burst"), To: to}})
	}
	calls := p.Stats().RecvCalls
	poll(burst)
	if c := p.Stats().RecvCalls - calls; c > 20 {
		t.Fatalf("a backlog of %d datagrams took %d receive calls", burst, c)
	}
}
