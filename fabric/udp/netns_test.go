//go:build linux

package udp

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric"
)

// netnsPair creates two network namespaces joined by a veth pair with the
// given MTU, addresses 10.77.0.1/24 and 10.77.0.2/24, and deletes them when
// the test ends, whatever its outcome.
func netnsPair(t *testing.T, mtu int) (nsA, nsB string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 (ip) not installed")
	}
	tag := fmt.Sprintf("%d%04x", os.Getpid()%100000, rand.Uint32()&0xffff)
	nsA, nsB = "pcorudp"+tag+"a", "pcorudp"+tag+"b"
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	for _, ns := range []string{nsA, nsB} {
		ip("netns", "add", ns)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("ip netns del %s: %v: %s", ns, err, out)
			}
		})
	}
	// Created inside the namespaces, so the device names cannot clash with
	// anything in the host namespace.
	ip("-n", nsA, "link", "add", "va", "type", "veth", "peer", "name", "vb", "netns", nsB)
	for _, c := range []struct{ ns, dev, addr string }{{nsA, "va", "10.77.0.1/24"}, {nsB, "vb", "10.77.0.2/24"}} {
		ip("-n", c.ns, "link", "set", "lo", "up")
		ip("-n", c.ns, "link", "set", c.dev, "mtu", fmt.Sprint(mtu), "up")
		ip("-n", c.ns, "addr", "add", c.addr, "dev", c.dev)
	}
	return nsA, nsB
}

// listenIn opens a port inside the named namespace: the socket (and the
// port's MTU probe socket) belong to the namespace they were created in.
func listenIn(t *testing.T, ns, addr string, cfg Config) *Port {
	t.Helper()
	var p *Port
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		orig, oerr := os.Open("/proc/thread-self/ns/net")
		if oerr != nil {
			err = oerr
			runtime.UnlockOSThread()
			return
		}
		defer orig.Close()
		target, oerr := os.Open("/var/run/netns/" + ns)
		if oerr != nil {
			err = oerr
			runtime.UnlockOSThread()
			return
		}
		defer target.Close()
		if err = unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			return
		}
		p, err = Listen(addr, cfg)
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else the thread stays locked and dies with this goroutine
	}()
	<-done
	if err != nil {
		t.Fatalf("listen %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// warmUp sends single datagrams until one arrives, so that neighbour
// resolution is done before a burst.
func warmUp(t *testing.T, a, b *Port, to fabric.Endpoint) {
	t.Helper()
	msgs := make([][]byte, 8)
	for try := 0; ; try++ {
		if _, err := a.Send([]fabric.Datagram{{Body: []byte("warm"), To: to}}); err != nil {
			t.Fatal(err)
		}
		b.SetReceiveDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := b.Receive(msgs)
		b.SetReceiveDeadline(time.Time{})
		if err == nil && n > 0 {
			for { // drain late copies of earlier tries
				if n, _ := b.Poll(msgs); n == 0 {
					return
				}
			}
		}
		if try == 20 {
			t.Fatalf("no datagram crossed the link after %d tries: %v", try+1, err)
		}
	}
}

func TestNetnsVethMTU(t *testing.T) {
	nsA, nsB := netnsPair(t, 1500)
	a := listenIn(t, nsA, "10.77.0.1:0", Config{})
	b := listenIn(t, nsB, "10.77.0.2:0", Config{})
	to, err := a.ParseEndpoint(b.LocalEndpoint().String())
	if err != nil {
		t.Fatal(err)
	}
	if m := a.MaxDatagram(to); m != 1472 {
		t.Fatalf("MaxDatagram across a 1500-MTU veth = %d, want 1472", m)
	}
	warmUp(t, a, b, to)

	rng := rand.New(rand.NewPCG(20, 21))
	const burst = 300
	dgs := sameSizeRun(rng, burst, 1472, 1000, to.(*Endpoint))
	for off := 0; off < len(dgs); {
		n, err := a.Send(dgs[off:min(off+a.BatchSize(), len(dgs))])
		if err != nil {
			t.Fatalf("Send at %d: %v", off, err)
		}
		off += n
	}
	checkSame(t, dgs, receiveN(t, b, burst, 10*time.Second))
	sa := a.Stats()
	t.Logf("sender %+v", sa)
	t.Logf("receiver %+v", b.Stats())
	if a.GSO() && sa.GSOSegments < burst {
		t.Errorf("GSO on but only %d of %d datagrams went in GSO sends", sa.GSOSegments, burst)
	}

	n, err := a.Send([]fabric.Datagram{{Body: make([]byte, 1473), To: to}})
	if n != 0 || !errors.Is(err, fabric.ErrTooBig) {
		t.Errorf("Send of 1473 bytes = %d, %v; want ErrTooBig", n, err)
	}

	// A destination without a route loses its datagram; the batch goes on.
	nowhere, _ := a.ParseEndpoint("10.78.0.1:9")
	before := a.Stats().SendDropped
	n, err = a.Send([]fabric.Datagram{{Body: []byte("lost"), To: nowhere}, {Body: []byte("kept"), To: to}})
	if n != 2 || err != nil {
		t.Fatalf("Send with an unroutable destination = %d, %v; want 2, nil", n, err)
	}
	if got := receiveN(t, b, 1, 5*time.Second); string(got[0]) != "kept" {
		t.Fatalf("got %q after the unroutable datagram", got[0])
	}
	if d := a.Stats().SendDropped - before; d != 1 {
		t.Errorf("SendDropped grew by %d, want 1", d)
	}

	// The probe reads the route in the port's own namespace (from the host
	// namespace 10.77.0.2 has no route, and the fallback would say 1472):
	// a smaller link MTU shows up for a fresh endpoint.
	if out, err := exec.Command("ip", "-n", nsA, "link", "set", "va", "mtu", "1400").CombinedOutput(); err != nil {
		t.Fatalf("set mtu: %v: %s", err, out)
	}
	fresh, _ := a.ParseEndpoint(b.LocalEndpoint().String())
	if m := a.MaxDatagram(fresh); m != 1372 {
		t.Errorf("MaxDatagram after the link MTU fell to 1400 = %d, want 1372", m)
	}
}

func TestNetnsGSOFallback(t *testing.T) {
	nsA, nsB := netnsPair(t, 1500)
	// The configured MTU claims 9000 on a 1500 link: the kernel refuses GSO
	// segments larger than the link MTU, while single datagrams of that
	// size still go (as IP fragments). The port must turn GSO off and
	// deliver everything.
	a := listenIn(t, nsA, "10.77.0.1:0", Config{MTU: 9000})
	b := listenIn(t, nsB, "10.77.0.2:0", Config{})
	if !a.GSO() {
		t.Skip("kernel lacks UDP GSO")
	}
	to, _ := a.ParseEndpoint(b.LocalEndpoint().String())
	warmUp(t, a, b, to)
	rng := rand.New(rand.NewPCG(22, 23))
	dgs := sameSizeRun(rng, 8, 3000, 3000, to.(*Endpoint))
	if n, err := a.Send(dgs); err != nil || n != len(dgs) {
		t.Fatalf("Send = %d, %v", n, err)
	}
	checkSame(t, dgs, receiveN(t, b, len(dgs), 5*time.Second))
	s := a.Stats()
	if s.GSOFallbacks != 1 || a.GSO() {
		t.Errorf("GSOFallbacks = %d, GSO() = %v; want 1, false", s.GSOFallbacks, a.GSO())
	}
}

// TestNetnsSlowLinkSendWaits slows the link with a token bucket so that
// datagrams pile up in the qdisc, charged to the sender's socket buffer:
// Send then meets EAGAIN and must wait for room (not spin), a send
// deadline must stop it, and Close must wake it.
func TestNetnsSlowLinkSendWaits(t *testing.T) {
	nsA, nsB := netnsPair(t, 1500)
	if out, err := exec.Command("ip", "netns", "exec", nsA, "tc", "qdisc", "add", "dev", "va", "root",
		"tbf", "rate", "20mbit", "burst", "16kb", "limit", "4mb").CombinedOutput(); err != nil {
		t.Skipf("tc tbf unavailable: %v: %s", err, out)
	}
	a := listenIn(t, nsA, "10.77.0.1:0", Config{SendBuffer: 64 << 10, DisableGSO: true})
	b := listenIn(t, nsB, "10.77.0.2:0", Config{})
	to, _ := a.ParseEndpoint(b.LocalEndpoint().String())
	warmUp(t, a, b, to)

	// 300 x 1472 bytes at 20 Mbit/s: about 180 ms, far more than 64 KiB
	// of socket buffer holds.
	rng := rand.New(rand.NewPCG(30, 31))
	dgs := sameSizeRun(rng, 300, 1472, 1472, to.(*Endpoint))
	a.SetSendDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	n, err := a.Send(dgs)
	if err != nil || n != len(dgs) {
		t.Fatalf("Send = %d, %v", n, err)
	}
	checkSame(t, dgs, receiveN(t, b, len(dgs), 10*time.Second))
	s := a.Stats()
	t.Logf("sent in %v: %+v", time.Since(start), s)
	if s.SendWaits == 0 {
		t.Fatalf("Send never waited for the socket buffer")
	}
	// Each wait costs the sendmmsg that met EAGAIN, the one after
	// wake-up and at times one more that took part of a batch; spinning
	// would show as many calls as there are polls of the socket, hundreds.
	if limit := 3*s.SendWaits + uint64(len(dgs)/a.BatchSize()) + 2; s.SendCalls > limit {
		t.Errorf("%d sendmmsg calls for %d waits: spinning?", s.SendCalls, s.SendWaits)
	}

	// A deadline stops a Send stuck on a full buffer.
	big := sameSizeRun(rng, 2000, 1472, 1472, to.(*Endpoint))
	a.SetSendDeadline(time.Now().Add(50 * time.Millisecond))
	n, err = a.Send(big)
	if !errors.Is(err, os.ErrDeadlineExceeded) || n >= len(big) {
		t.Fatalf("Send past the deadline = %d, %v; want fewer than %d, os.ErrDeadlineExceeded", n, err, len(big))
	}

	// Close wakes a Send stuck on a full buffer.
	a.SetSendDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() {
		_, err := a.Send(big)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	a.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, fabric.ErrClosed) {
			t.Fatalf("blocked Send after Close = %v, want fabric.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a blocked Send")
	}
}
