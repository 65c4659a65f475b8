package rdma

import (
	"encoding/binary"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

func listenOrSkip(t testing.TB, cfg Config) *Port {
	t.Helper()
	requireDevice(t)
	p, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// receiver collects echoed datagrams in a goroutine until the port closes.
type receiver struct {
	mu   sync.Mutex
	got  map[uint64]int // seq -> length
	zero int
	errs []error
	done chan struct{}
}

func startReceiver(p *Port) *receiver { return startReceiverOpt(p, true) }

// startReceiverOpt with verify false only records sequence numbers.
func startReceiverOpt(p *Port, verify bool) *receiver {
	r := &receiver{got: map[uint64]int{}, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		msgs := make([][]byte, p.BatchSize())
		for {
			n, err := p.Receive(msgs)
			if err != nil {
				if !errors.Is(err, fabric.ErrClosed) {
					r.mu.Lock()
					r.errs = append(r.errs, err)
					r.mu.Unlock()
				}
				return
			}
			r.mu.Lock()
			for _, m := range msgs[:n] {
				if len(m) == 0 {
					r.zero++
					continue
				}
				if !verify && len(m) >= 8 {
					r.got[binary.LittleEndian.Uint64(m)] = len(m)
					continue
				}
				seq, err := checkDatagram(m)
				if err != nil {
					r.errs = append(r.errs, err)
					continue
				}
				r.got[seq] = len(m)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func TestPortEchoTwoProcesses(t *testing.T) {
	p := listenOrSkip(t, Config{ZeroCopyMin: 1}) // every body in Alloc'd memory read in place
	peer := startPeer(t, "echo", "RDMA_TEST_TO="+p.LocalEndpoint().String())
	to, err := p.ParseEndpoint(peer.ep)
	if err != nil {
		t.Fatal(err)
	}
	r := startReceiver(p)

	// One empty datagram first.
	if _, err := p.Send([]fabric.Datagram{{To: to}}); err != nil {
		t.Fatal(err)
	}
	// Then many, of all sizes up to MaxDatagram, in batches, half of them
	// with the body in Alloc'd (zero-copy) memory.
	const total = 1200
	zcMem := p.Alloc(MaxDatagram * p.BatchSize() / 2)
	sizes := func(seq int) int {
		switch seq % 5 {
		case 0:
			return MaxDatagram
		case 1:
			return 8
		default:
			return 8 + (seq*7919)%(MaxDatagram-8)
		}
	}
	want := map[uint64]int{}
	batch := make([]fabric.Datagram, 0, p.BatchSize())
	heads := make([][8]byte, p.BatchSize())
	bodies := make([][]byte, p.BatchSize())
	for i := range bodies {
		bodies[i] = make([]byte, MaxDatagram)
	}
	for seq := 0; seq < total; {
		batch = batch[:0]
		for len(batch) < cap(batch) && seq < total {
			n := sizes(seq)
			k := len(batch)
			binary.LittleEndian.PutUint64(heads[k][:], uint64(seq))
			body := bodies[k][:n-8]
			if k%2 == 1 {
				body = zcMem[k/2*MaxDatagram:][:n-8]
			}
			pattern(body, uint64(seq))
			batch = append(batch, fabric.Datagram{Head: heads[k][:], Body: body, To: to})
			want[uint64(seq)] = n
			seq++
		}
		if n, err := p.Send(batch); err != nil || n != len(batch) {
			t.Fatalf("Send: %d of %d: %v", n, len(batch), err)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	for r.count() < total && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	p.Close()
	<-r.done
	for _, err := range r.errs {
		t.Error(err)
	}
	if len(r.got) != total || r.zero != 1 {
		t.Fatalf("echoed %d of %d datagrams, %d empty; stats %+v; last failure %v", len(r.got), total, r.zero, p.Stats(), p.LastFailure())
	}
	for seq, n := range want {
		if r.got[seq] != n {
			t.Fatalf("datagram %d: %d bytes, want %d", seq, r.got[seq], n)
		}
	}
	st := p.Stats()
	if st.Dropped != 0 || st.ZeroCopy == 0 || st.Connects != 1 || st.PeerFailures != 0 {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("stats %+v", st)
}

func TestPortPeerKilled(t *testing.T) {
	p := listenOrSkip(t, Config{SendTimeout: 3 * time.Second})
	peer := startPeer(t, "echo", "RDMA_TEST_TO="+p.LocalEndpoint().String())
	to, _ := p.ParseEndpoint(peer.ep)
	r := startReceiver(p)
	body := make([]byte, 4000)
	send := func(seq int) error {
		var h [8]byte
		binary.LittleEndian.PutUint64(h[:], uint64(seq))
		pattern(body, uint64(seq))
		_, err := p.Send([]fabric.Datagram{{Head: h[:], Body: body, To: to}})
		return err
	}
	for seq := 0; seq < 50; seq++ {
		if err := send(seq); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); r.count() < 50; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 50 echoed before the kill", r.count())
		}
		time.Sleep(20 * time.Millisecond)
	}
	lost := make(chan fabric.Endpoint, 4)
	p.OnPeerLost(func(e fabric.Endpoint) { lost <- e })
	peer.cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	// Keep sending: every Send must return promptly and the peer must be
	// declared lost within seconds.
	for seq := 50; ; seq++ {
		start := time.Now()
		if err := send(seq); err != nil {
			t.Fatalf("Send after the kill: %v", err)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Fatalf("Send took %v after the peer died", d)
		}
		st := p.Stats()
		if st.PeerFailures >= 1 && st.Dropped >= 1 {
			t.Logf("peer lost after %v (%s): %+v (%v)", time.Since(killed), peer.goneSince(killed), st, p.LastFailure())
			if !errors.Is(p.LastFailure(), ErrPeerLost) {
				t.Fatalf("last failure %v does not match ErrPeerLost", p.LastFailure())
			}
			break
		}
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("peer death not noticed in 20s: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case e := <-lost:
		if e.String() != to.String() {
			t.Fatalf("peer lost reported for %v, want %v", e, to)
		}
		t.Logf("peer lost reported %v after the kill", time.Since(killed))
	case <-time.After(10 * time.Second):
		t.Fatal("the port never reported the peer lost")
	}
	// The dead QP's posted receives come back (flushed) to the pool.
	for deadline := time.Now().Add(10 * time.Second); ; {
		p.rxMu.Lock()
		free, all := len(p.recv.free), p.recv.n
		p.rxMu.Unlock()
		if free == all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d receive buffers back in the pool 10s after the peer died", free, all)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A Send destroys the failed QPs once their work is done (the
	// keep-alive READ in flight is flushed too).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		send(10000)
		st := p.Stats()
		if st.Retired >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failed QP not retired: %+v", st)
		}
	}
	// A Receive blocked on a port with a dead peer ends with Close.
	p.Close()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Receive did not return after Close")
	}
	if _, err := p.Send([]fabric.Datagram{{To: to}}); !errors.Is(err, fabric.ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
}

func TestPortUnreachableEndpoint(t *testing.T) {
	p := listenOrSkip(t, Config{HandshakeTimeout: 300 * time.Millisecond})
	// No queue pair has this number: nobody answers, datagram dropped.
	to, err := p.ParseEndpoint(udAddr{gid: p.udAddr.gid, qpn: 0xfffff0}.endpoint().String())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if n, err := p.Send([]fabric.Datagram{{Body: []byte("x"), To: to}}); err != nil || n != 1 {
			t.Fatalf("Send to a dead endpoint: %d %v", n, err)
		}
	}
	st := p.Stats()
	if st.Dropped != 3 || st.HandshakeFailure != 1 {
		t.Fatalf("stats %+v, want 3 dropped after 1 failed handshake (backoff)", st)
	}
	big := make([]byte, MaxDatagram+1)
	if _, err := p.Send([]fabric.Datagram{{Body: big, To: to}}); !errors.Is(err, fabric.ErrTooBig) {
		t.Fatalf("oversized: %v", err)
	}
	if n, err := p.Poll(make([][]byte, 4)); n != 0 || err != nil {
		t.Fatalf("Poll on an idle port: %d %v", n, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Receive(make([][]byte, 1)); !errors.Is(err, fabric.ErrClosed) {
		t.Fatalf("Receive after Close: %v", err)
	}
}

// TestPortSendWithoutReceiving: the sending goroutine is also the only
// receiver (as in the dispatcher) and sends far more than one QP's worth of
// receive buffers before it receives again, to an echo peer that is in the
// same situation. Receive rings must be topped up while Send waits, or both
// processes block in Send until the peer is declared lost.
func TestPortSendWithoutReceiving(t *testing.T) {
	p := listenOrSkip(t, Config{SendTimeout: 5 * time.Second})
	peer := startPeer(t, "echo", "RDMA_TEST_TO="+p.LocalEndpoint().String())
	to, _ := p.ParseEndpoint(peer.ep)
	const total = 200 // more than RecvPerPeer, less than RecvBuffers
	body := make([]byte, 16<<10)
	for seq := 0; seq < total; seq += 8 {
		batch := make([]fabric.Datagram, 8)
		for k := range batch {
			h := make([]byte, 8)
			binary.LittleEndian.PutUint64(h, uint64(seq+k))
			b := append([]byte(nil), body...)
			pattern(b, uint64(seq+k))
			batch[k] = fabric.Datagram{Head: h, Body: b, To: to}
		}
		if _, err := p.Send(batch); err != nil {
			t.Fatal(err)
		}
	}
	got := map[uint64]bool{}
	msgs := make([][]byte, p.BatchSize())
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < total && time.Now().Before(deadline) {
		n, err := p.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			seq, err := checkDatagram(m)
			if err != nil {
				t.Fatal(err)
			}
			got[seq] = true
		}
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if st := p.Stats(); len(got) != total || st.Dropped != 0 || st.PeerFailures != 0 {
		t.Fatalf("%d of %d echoed; stats %+v; last failure %v", len(got), total, st, p.LastFailure())
	}
}

// TestPortForeignJob: a port refuses the connection of a port with another
// job key (REJ, counted as Foreign), whose dialer then gives up at once
// rather than after its handshake timeout, and no datagram crosses; a port
// of the same job connects.
func TestPortForeignJob(t *testing.T) {
	a := listenOrSkip(t, Config{JobKey: 1, HandshakeTimeout: 30 * time.Second})
	b := listenOrSkip(t, Config{JobKey: 2})
	c := listenOrSkip(t, Config{JobKey: 1})
	toB, _ := a.ParseEndpoint(b.LocalEndpoint().String())
	start := time.Now()
	if n, err := a.Send([]fabric.Datagram{{Body: []byte("foreign"), To: toB}}); err != nil || n != 1 {
		t.Fatalf("Send to a foreign port: %d %v", n, err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("the dialer waited %v: it did not see the refusal", d)
	}
	msgs := make([][]byte, 4)
	if n, err := b.Poll(msgs); n != 0 || err != nil {
		t.Fatalf("the foreign port received %d datagrams (%v)", n, err)
	}
	sa, sb := a.Stats(), b.Stats()
	if sb.Foreign < 1 || sb.Connects != 0 || sa.Connects != 0 || sa.HandshakeFailure != 1 || sa.Dropped != 1 {
		t.Fatalf("after a foreign connect: dialer %+v, refuser %+v", sa, sb)
	}
	t.Logf("refused in %v; refuser's stats %+v", time.Since(start), sb)

	toC, _ := a.ParseEndpoint(c.LocalEndpoint().String())
	if n, err := a.Send([]fabric.Datagram{{Body: []byte("same job"), To: toC}}); err != nil || n != 1 {
		t.Fatalf("Send to a port of the same job: %d %v", n, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		n, err := c.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 && string(msgs[0]) == "same job" {
			break
		}
		if n != 0 || time.Now().After(deadline) {
			t.Fatalf("port of the same job: %d datagrams %q; stats %+v", n, msgs[:n], c.Stats())
		}
	}
	if sc := c.Stats(); sc.Foreign != 0 || sc.Connects != 1 {
		t.Fatalf("port of the same job: stats %+v", sc)
	}
}
