//go:build linux

package udp

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
)

func listen(t testing.TB, addr string, cfg Config) *Port {
	t.Helper()
	p, err := Listen(addr, cfg)
	if err != nil {
		t.Fatalf("Listen(%s): %v", addr, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func endpoint(t testing.TB, p *Port) *Endpoint {
	t.Helper()
	return p.LocalEndpoint().(*Endpoint)
}

// receiveN collects copies of n datagrams, failing after timeout.
func receiveN(t testing.TB, p *Port, n int, timeout time.Duration) [][]byte {
	t.Helper()
	if err := p.SetReceiveDeadline(time.Now().Add(timeout)); err != nil {
		t.Fatal(err)
	}
	defer p.SetReceiveDeadline(time.Time{})
	msgs := make([][]byte, p.BatchSize())
	var got [][]byte
	for len(got) < n {
		k, err := p.Receive(msgs)
		if err != nil {
			t.Fatalf("Receive after %d of %d datagrams: %v", len(got), n, err)
		}
		for _, m := range msgs[:k] {
			got = append(got, bytes.Clone(m))
		}
	}
	return got
}

// randomDatagrams makes n datagrams to the given endpoints in turn, with
// random heads and bodies of up to maxBody bytes.
func randomDatagrams(rng *rand.Rand, n, maxBody int, to ...*Endpoint) []fabric.Datagram {
	dgs := make([]fabric.Datagram, n)
	for i := range dgs {
		h := make([]byte, rng.IntN(41))
		b := make([]byte, rng.IntN(maxBody+1))
		for j := range h {
			h[j] = byte(rng.Uint32())
		}
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		dgs[i] = fabric.Datagram{Head: h, Body: b, To: to[i%len(to)]}
	}
	return dgs
}

func joined(d fabric.Datagram) []byte { return append(bytes.Clone(d.Head), d.Body...) }

func checkSame(t *testing.T, want []fabric.Datagram, got [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d datagrams, want %d", len(got), len(want))
	}
	for i := range want {
		if w := joined(want[i]); !bytes.Equal(got[i], w) {
			t.Fatalf("datagram %d: got %d bytes, want %d bytes (contents differ: %v)", i, len(got[i]), len(w), len(got[i]) == len(w))
		}
	}
}

func TestRoundTripBatches(t *testing.T) {
	for _, cfg := range []Config{{}, {DisableGSO: true, DisableGRO: true}, {BatchSize: 7}} {
		t.Run(fmt.Sprintf("gso=%v,gro=%v,batch=%d", !cfg.DisableGSO, !cfg.DisableGRO, cfg.BatchSize), func(t *testing.T) {
			a := listen(t, "127.0.0.1:0", cfg)
			b := listen(t, "127.0.0.1:0", cfg)
			c := listen(t, "127.0.0.1:0", cfg)
			rng := rand.New(rand.NewPCG(1, 2))
			// Interleaved destinations: no GSO runs, every datagram its own message.
			dgs := randomDatagrams(rng, 3*64+5, 1400, endpoint(t, b), endpoint(t, c))
			n, err := a.Send(dgs)
			if err != nil || n != len(dgs) {
				t.Fatalf("Send = %d, %v; want %d, nil", n, err, len(dgs))
			}
			var toB, toC []fabric.Datagram
			for i, d := range dgs {
				if i%2 == 0 {
					toB = append(toB, d)
				} else {
					toC = append(toC, d)
				}
			}
			checkSame(t, toB, receiveN(t, b, len(toB), 5*time.Second))
			checkSame(t, toC, receiveN(t, c, len(toC), 5*time.Second))
			if s := a.Stats(); s.SentDatagrams != uint64(len(dgs)) {
				t.Errorf("Stats.SentDatagrams = %d, want %d", s.SentDatagrams, len(dgs))
			}
		})
	}
}

// sameSizeRun builds n datagrams of size bytes (head 16) to one endpoint,
// the last one lastSize bytes (both at least 16).
func sameSizeRun(rng *rand.Rand, n, size, lastSize int, to *Endpoint) []fabric.Datagram {
	dgs := make([]fabric.Datagram, n)
	for i := range dgs {
		sz := size
		if i == n-1 {
			sz = lastSize
		}
		buf := make([]byte, sz)
		for j := range buf {
			buf[j] = byte(rng.Uint32())
		}
		dgs[i] = fabric.Datagram{Head: buf[:16], Body: buf[16:], To: to}
	}
	return dgs
}

func TestGSOAndGROOnLoopback(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	if !a.GSO() || !b.GRO() {
		t.Skipf("kernel lacks UDP GSO (%v) or GRO (%v)", a.GSO(), b.GRO())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	// 100 datagrams of 1000 bytes: runs of at most 64 segments and 64 KiB,
	// so at least two GSO messages; the last datagram is shorter.
	dgs := sameSizeRun(rng, 100, 1000, 321, endpoint(t, b))
	n, err := a.Send(dgs)
	if err != nil || n != len(dgs) {
		t.Fatalf("Send = %d, %v", n, err)
	}
	checkSame(t, dgs, receiveN(t, b, len(dgs), 5*time.Second))
	sa, sb := a.Stats(), b.Stats()
	t.Logf("sender %+v", sa)
	t.Logf("receiver %+v", sb)
	if sa.GSOSends < 2 || sa.GSOSegments != uint64(len(dgs)) {
		t.Errorf("GSOSends = %d, GSOSegments = %d; want >= 2 sends carrying all %d datagrams", sa.GSOSends, sa.GSOSegments, len(dgs))
	}
	if want := uint64((len(dgs) + a.BatchSize() - 1) / a.BatchSize()); sa.SendCalls != want {
		t.Errorf("SendCalls = %d, want %d: one sendmmsg per BatchSize datagrams", sa.SendCalls, want)
	}
	if sb.GROBuffers == 0 {
		t.Errorf("GROBuffers = 0: the receiver got no coalesced buffer")
	}
	if sb.RecvDatagrams != uint64(len(dgs)) {
		t.Errorf("RecvDatagrams = %d, want %d", sb.RecvDatagrams, len(dgs))
	}
}

func TestGSOToReceiverWithoutGRO(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{DisableGRO: true})
	if !a.GSO() {
		t.Skip("kernel lacks UDP GSO")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	dgs := sameSizeRun(rng, 50, 1472, 1472, endpoint(t, b))
	if n, err := a.Send(dgs); err != nil || n != len(dgs) {
		t.Fatalf("Send = %d, %v", n, err)
	}
	checkSame(t, dgs, receiveN(t, b, len(dgs), 5*time.Second))
	if a.Stats().GSOSends == 0 {
		t.Errorf("no GSO send")
	}
	if g := b.Stats().GROBuffers; g != 0 {
		t.Errorf("GROBuffers = %d with GRO disabled", g)
	}
}

func TestReceiveSmallSliceKeepsRest(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	rng := rand.New(rand.NewPCG(7, 8))
	dgs := sameSizeRun(rng, 40, 200, 200, endpoint(t, b))
	if n, err := a.Send(dgs); err != nil || n != len(dgs) {
		t.Fatalf("Send = %d, %v", n, err)
	}
	b.SetReceiveDeadline(time.Now().Add(5 * time.Second))
	msgs := make([][]byte, 3)
	var got [][]byte
	for len(got) < len(dgs) {
		k, err := b.Receive(msgs)
		if err != nil {
			t.Fatalf("Receive after %d: %v", len(got), err)
		}
		if k > len(msgs) {
			t.Fatalf("Receive returned %d > len(msgs)", k)
		}
		for _, m := range msgs[:k] {
			got = append(got, bytes.Clone(m))
		}
	}
	checkSame(t, dgs, got)
}

func TestPoll(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	msgs := make([][]byte, 8)
	if n, err := b.Poll(msgs); n != 0 || err != nil {
		t.Fatalf("Poll on an empty port = %d, %v; want 0, nil", n, err)
	}
	want := []byte("hello, poll")
	if _, err := a.Send([]fabric.Datagram{{Body: want, To: endpoint(t, b)}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := b.Poll(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			if !bytes.Equal(msgs[0], want) {
				t.Fatalf("Poll got %q, want %q", msgs[0], want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Poll never returned the datagram")
		}
		time.Sleep(time.Millisecond)
	}
	if n, err := b.Poll(msgs); n != 0 || err != nil {
		t.Fatalf("Poll after draining = %d, %v; want 0, nil", n, err)
	}
}

func TestCloseUnblocksReceive(t *testing.T) {
	before := runtime.NumGoroutine()
	p, err := Listen("127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.Receive(make([][]byte, 4))
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // let Receive park in the poller
	select {
	case err := <-errc:
		t.Fatalf("Receive returned before Close: %v", err)
	default:
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, fabric.ErrClosed) {
			t.Fatalf("Receive after Close = %v, want fabric.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Receive")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if _, err := p.Poll(make([][]byte, 1)); !errors.Is(err, fabric.ErrClosed) {
		t.Errorf("Poll after Close = %v", err)
	}
	ep, _ := ParseEndpoint("127.0.0.1:9")
	if _, err := p.Send([]fabric.Datagram{{Body: []byte("x"), To: ep}}); !errors.Is(err, fabric.ErrClosed) {
		t.Errorf("Send after Close = %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d after Close, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReceiveDeadline(t *testing.T) {
	p := listen(t, "127.0.0.1:0", Config{})
	p.SetReceiveDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := p.Receive(make([][]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Receive past deadline = %v, want os.ErrDeadlineExceeded", err)
	}
}

func TestTooBig(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	to := endpoint(t, b)
	if m := a.MaxDatagram(to); m != 65507 {
		t.Fatalf("MaxDatagram(loopback) = %d, want 65507", m)
	}
	dgs := []fabric.Datagram{
		{Body: make([]byte, 100), To: to},
		{Body: make([]byte, 65507), To: to},
		{Head: make([]byte, 1), Body: make([]byte, 65507), To: to},
		{Body: make([]byte, 10), To: to},
	}
	n, err := a.Send(dgs)
	if n != 2 || !errors.Is(err, fabric.ErrTooBig) {
		t.Fatalf("Send = %d, %v; want 2, ErrTooBig", n, err)
	}
	got := receiveN(t, b, 2, 5*time.Second)
	if len(got[0]) != 100 || len(got[1]) != 65507 {
		t.Fatalf("received sizes %d, %d; want 100, 65507", len(got[0]), len(got[1]))
	}
}

func TestMTUOverride(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{MTU: 1500})
	b := listen(t, "127.0.0.1:0", Config{})
	to := endpoint(t, b)
	if m := a.MaxDatagram(to); m != 1472 {
		t.Fatalf("MaxDatagram with MTU 1500 = %d, want 1472", m)
	}
	v6, _ := ParseEndpoint("[2001:db8::1]:7")
	if m := a.MaxDatagram(v6); m != 1452 {
		t.Errorf("MaxDatagram(IPv6) with MTU 1500 = %d, want 1452", m)
	}
	n, err := a.Send([]fabric.Datagram{{Body: make([]byte, 1472), To: to}, {Body: make([]byte, 1473), To: to}})
	if n != 1 || !errors.Is(err, fabric.ErrTooBig) {
		t.Fatalf("Send = %d, %v; want 1, ErrTooBig", n, err)
	}
	if _, err := Listen("127.0.0.1:0", Config{MTU: 100}); err == nil {
		t.Error("Listen accepted MTU 100")
	}
}

func TestMaxDatagramProbesRoute(t *testing.T) {
	// 127.0.0.1 bound sockets reach loopback; the route to another
	// loopback-range address also goes through lo, MTU 65536.
	a := listen(t, "127.0.0.1:0", Config{})
	ep, _ := ParseEndpoint("127.0.0.2:9")
	if m := a.MaxDatagram(ep); m != 65507 {
		t.Fatalf("MaxDatagram(127.0.0.2) = %d", m)
	}
	if m := a.MaxDatagram(mem.Endpoint("x")); m != 1452 {
		t.Errorf("MaxDatagram(foreign endpoint) = %d, want the conservative 1452", m)
	}
}

func TestParseEndpoint(t *testing.T) {
	p := listen(t, "127.0.0.1:0", Config{})
	for _, s := range []string{"127.0.0.1:80", "10.1.2.3:65535", "0.0.0.0:1"} {
		e, err := p.ParseEndpoint(s)
		if err != nil {
			t.Errorf("ParseEndpoint(%q): %v", s, err)
			continue
		}
		if e.String() != s {
			t.Errorf("ParseEndpoint(%q).String() = %q", s, e.String())
		}
	}
	if e, err := ParseEndpoint("[::ffff:10.0.0.1]:5"); err != nil || e.String() != "10.0.0.1:5" {
		t.Errorf("v4-mapped: %v, %v", e, err)
	}
	if e, err := ParseEndpoint("[::1]:5"); err != nil || e.String() != "[::1]:5" {
		t.Errorf("IPv6: %v, %v", e, err)
	}
	for _, s := range []string{"", "127.0.0.1", "127.0.0.1:0", "localhost:80", "1.2.3.4:99999", "[fe80::1%eth0]:5", "::1:5"} {
		if _, err := ParseEndpoint(s); !errors.Is(err, ErrBadEndpoint) {
			t.Errorf("ParseEndpoint(%q) = %v, want ErrBadEndpoint", s, err)
		}
	}
	if _, err := p.ParseEndpoint("[::1]:5"); !errors.Is(err, ErrBadEndpoint) {
		t.Errorf("IPv6 endpoint on an IPv4 port: %v", err)
	}
	if s := p.LocalEndpoint().String(); s == "" || s == "127.0.0.1:0" {
		t.Errorf("LocalEndpoint = %q", s)
	}
}

func TestSendBadEndpoint(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	ok := endpoint(t, listen(t, "127.0.0.1:0", Config{}))
	v6, _ := ParseEndpoint("[::1]:9")
	for _, to := range []fabric.Endpoint{nil, mem.Endpoint("m"), (*Endpoint)(nil), v6} {
		n, err := a.Send([]fabric.Datagram{{Body: []byte("a"), To: ok}, {Body: []byte("b"), To: to}})
		if n != 1 || !errors.Is(err, ErrBadEndpoint) {
			t.Errorf("Send to %#v = %d, %v; want 1, ErrBadEndpoint", to, n, err)
		}
	}
}

func TestListenErrors(t *testing.T) {
	for _, c := range []struct {
		addr string
		cfg  Config
	}{
		{"nonsense", Config{}},
		{"127.0.0.1:0", Config{BatchSize: -1}},
		{"127.0.0.1:0", Config{BatchSize: MaxBatchSize + 1}},
		{"127.0.0.1:0", Config{RecvBuffer: -5}},
		{"192.0.2.1:0", Config{}}, // not a local address
	} {
		if p, err := Listen(c.addr, c.cfg); err == nil {
			p.Close()
			t.Errorf("Listen(%q, %+v) succeeded", c.addr, c.cfg)
		}
	}
}

// TestReusePort binds a port given by number twice, as a restarted
// process does while its predecessor's socket is still open, and again at
// once after both closed.
func TestReusePort(t *testing.T) {
	addr := freeAddr(t)
	a := listen(t, addr, Config{})
	b := listen(t, addr, Config{}) // a second socket on the same port
	if b.LocalEndpoint().String() != addr {
		t.Fatalf("second socket bound %v, want %v", b.LocalEndpoint(), addr)
	}
	a.Close()
	b.Close()
	c := listen(t, addr, Config{}) // rebinding at once after close
	d := listen(t, "127.0.0.1:0", Config{})
	if _, err := d.Send([]fabric.Datagram{{Body: []byte("again"), To: endpoint(t, c)}}); err != nil {
		t.Fatal(err)
	}
	if got := receiveN(t, c, 1, 5*time.Second); string(got[0]) != "again" {
		t.Fatalf("got %q", got[0])
	}
}

func TestSocketBuffers(t *testing.T) {
	p := listen(t, "127.0.0.1:0", Config{RecvBuffer: 1 << 20, SendBuffer: 1 << 20})
	r, s := p.SocketBuffers()
	if r < 1<<19 || s < 1<<19 {
		t.Errorf("socket buffers %d/%d, want about 1 MiB", r, s)
	}
	if os.Geteuid() == 0 {
		// Forced past net.core.rmem_max (often smaller than 8 MiB).
		q := listen(t, "127.0.0.1:0", Config{})
		if r, _ := q.SocketBuffers(); r < DefaultBufferSize {
			t.Errorf("as root, receive buffer %d < %d", r, DefaultBufferSize)
		}
	}
}

func TestConcurrentSend(t *testing.T) {
	b := listen(t, "127.0.0.1:0", Config{})
	a := listen(t, "127.0.0.1:0", Config{})
	to := endpoint(t, b)
	const senders, per = 4, 50
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range per / 10 {
				dgs := randomDatagrams(rng, 10, 500, to)
				for i := range dgs {
					dgs[i].Head = []byte{byte(g)}
				}
				if n, err := a.Send(dgs); err != nil || n != len(dgs) {
					t.Errorf("Send = %d, %v", n, err)
					return
				}
			}
		}()
	}
	got := receiveN(t, b, senders*per, 10*time.Second)
	wg.Wait()
	count := make(map[byte]int)
	for _, m := range got {
		if len(m) == 0 {
			t.Fatal("empty datagram")
		}
		count[m[0]]++
	}
	for g := range senders {
		if count[byte(g)] != per {
			t.Errorf("sender %d: %d datagrams arrived, want %d", g, count[byte(g)], per)
		}
	}
}

func TestIPv6Loopback(t *testing.T) {
	a, err := Listen("[::1]:0", Config{})
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer a.Close()
	b := listen(t, "[::1]:0", Config{})
	to := endpoint(t, b)
	if m := a.MaxDatagram(to); m != MaxPayload {
		t.Errorf("MaxDatagram([::1]) = %d", m)
	}
	rng := rand.New(rand.NewPCG(10, 11))
	dgs := append(randomDatagrams(rng, 20, 1200, to), sameSizeRun(rng, 30, 1200, 77, to)...)
	if n, err := a.Send(dgs); err != nil || n != len(dgs) {
		t.Fatalf("Send = %d, %v", n, err)
	}
	checkSame(t, dgs, receiveN(t, b, len(dgs), 5*time.Second))
	// The largest payload, alone and as a GSO total.
	big := []fabric.Datagram{{Body: make([]byte, MaxPayload), To: to}}
	if n, err := a.Send(big); err != nil || n != 1 {
		t.Fatalf("Send of %d bytes over IPv6 = %d, %v", MaxPayload, n, err)
	}
	if got := receiveN(t, b, 1, 5*time.Second); len(got[0]) != MaxPayload {
		t.Fatalf("got %d bytes", len(got[0]))
	}
}

func TestZeroLengthDatagrams(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	to := endpoint(t, b)
	dgs := []fabric.Datagram{{To: to}, {Head: []byte("h"), To: to}, {To: to}, {Body: []byte("b"), To: to}, {To: to}}
	if n, err := a.Send(dgs); err != nil || n != len(dgs) {
		t.Fatalf("Send = %d, %v", n, err)
	}
	checkSame(t, dgs, receiveN(t, b, len(dgs), 5*time.Second))
}

func TestDualStackToIPv4(t *testing.T) {
	a, err := Listen("[::]:0", Config{})
	if err != nil {
		t.Skipf("no IPv6: %v", err)
	}
	defer a.Close()
	b := listen(t, "127.0.0.1:0", Config{})
	to, err := a.ParseEndpoint(b.LocalEndpoint().String())
	if err != nil {
		t.Fatal(err)
	}
	if m := a.MaxDatagram(to); m != MaxPayload {
		t.Errorf("MaxDatagram(127.0.0.1) from a dual-stack socket = %d", m)
	}
	rng := rand.New(rand.NewPCG(14, 15))
	dgs := append(randomDatagrams(rng, 10, 900, to.(*Endpoint)), sameSizeRun(rng, 20, 1000, 17, to.(*Endpoint))...)
	if n, err := a.Send(dgs); err != nil || n != len(dgs) {
		t.Fatalf("Send = %d, %v", n, err)
	}
	checkSame(t, dgs, receiveN(t, b, len(dgs), 5*time.Second))
}

func TestSendAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	for _, cfg := range []Config{{}, {DisableGSO: true, DisableGRO: true}} {
		a := listen(t, "127.0.0.1:0", cfg)
		b := listen(t, "127.0.0.1:0", cfg)
		rng := rand.New(rand.NewPCG(12, 13))
		dgs := append(randomDatagrams(rng, 32, 100, endpoint(t, b)), sameSizeRun(rng, 32, 64, 64, endpoint(t, b))...)
		msgs := make([][]byte, 64)
		a.Send(dgs) // warm the pool
		receiveN(t, b, len(dgs), 5*time.Second)
		allocs := testing.AllocsPerRun(50, func() {
			if n, err := a.Send(dgs); err != nil || n != len(dgs) {
				t.Fatalf("Send = %d, %v", n, err)
			}
			for got := 0; got < len(dgs); {
				n, err := b.Receive(msgs)
				if err != nil {
					t.Fatal(err)
				}
				got += n
			}
		})
		if allocs != 0 {
			t.Errorf("%+v: %.1f allocations per Send+Receive of %d datagrams, want 0", cfg, allocs, len(dgs))
		}
	}
}

// TestSendAlone: a Send of one datagram, which up to oneMax bytes goes
// as one copied buffer (sendOne), and of any size straight from its Head
// when it has no Body (sendWhole), delivers head and body in order for
// every split of the bytes between them, either side of oneMax, refuses
// one too big or to a bad endpoint, and allocates nothing.
func TestSendAlone(t *testing.T) {
	a := listen(t, "127.0.0.1:0", Config{})
	b := listen(t, "127.0.0.1:0", Config{})
	to := endpoint(t, b)
	rng := rand.New(rand.NewPCG(5, 6))
	fill := func(n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		return p
	}
	for _, total := range []int{0, 1, 2, 97, 255, oneMax - 1, oneMax, oneMax + 1, 2 * oneMax} {
		for _, head := range []int{0, 1, 40, 96, total} {
			if head > total || head == total && head <= 96 && head > 1 {
				continue
			}
			d := fabric.Datagram{Head: fill(head), Body: fill(total - head), To: to}
			if n, err := a.Send([]fabric.Datagram{d}); n != 1 || err != nil {
				t.Fatalf("Send of %d+%d bytes = %d, %v", head, total-head, n, err)
			}
			checkSame(t, []fabric.Datagram{d}, receiveN(t, b, 1, 5*time.Second))
		}
	}
	if n, err := a.Send([]fabric.Datagram{{Head: make([]byte, 65508), To: to}}); n != 0 || !errors.Is(err, fabric.ErrTooBig) {
		t.Errorf("Send of a whole datagram of 65508 bytes = %d, %v; want 0, ErrTooBig", n, err)
	}
	if n, err := a.Send([]fabric.Datagram{{Head: fill(97), To: mem.Endpoint("m")}}); n != 0 || !errors.Is(err, ErrBadEndpoint) {
		t.Errorf("Send of a whole datagram to a mem endpoint = %d, %v; want 0, ErrBadEndpoint", n, err)
	}
	if raceEnabled {
		return // the race detector makes sync.Pool drop items at random
	}
	for _, d := range []fabric.Datagram{{Head: fill(96), Body: fill(1), To: to}, {Head: fill(97), To: to}} {
		dgs := []fabric.Datagram{d}
		msgs := make([][]byte, 1)
		b.SetReceiveDeadline(time.Now().Add(5 * time.Second))
		allocs := testing.AllocsPerRun(50, func() {
			if n, err := a.Send(dgs); n != 1 || err != nil {
				t.Fatalf("Send = %d, %v", n, err)
			}
			if n, err := b.Receive(msgs); n != 1 || err != nil {
				t.Fatalf("Receive = %d, %v", n, err)
			}
		})
		if allocs != 0 {
			t.Errorf("%d+%d bytes: %.1f allocations per Send+Receive of one datagram, want 0", len(d.Head), len(d.Body), allocs)
		}
	}
}
