package pcor_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/internal/netnstest"
	"github.com/pcor-go/pcor/pcor"
)

// link is two network namespaces joined by a veth pair: a holds device
// devA at 10.77.0.1, b holds devB at 10.77.0.2.
type link struct {
	a, b       string
	devA, devB string
	mtu        int
}

// netnsPair makes two network namespaces joined by a veth pair with the
// given MTU. They are removed when the test ends, even on failure.
//
// A veth hands a GSO packet to its peer whole; a real NIC puts it on the
// wire as MTU-sized frames. gso_max_segs 1 makes the veth segment in
// software on transmit, so that what the peer's ingress sees (and what an
// nft netdev rule drops) is one frame of at most the MTU, as on a wire.
func netnsPair(t testing.TB, mtu int) link {
	t.Helper()
	netnstest.Require(t)
	suffix := strconv.Itoa(os.Getpid() % 100000)
	l := link{a: "pcora" + suffix, b: "pcorb" + suffix, devA: "va" + suffix, devB: "vb" + suffix, mtu: mtu}
	run := func(args ...string) { t.Helper(); netnstest.IP(t, args...) }
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", l.a).Run()
		exec.Command("ip", "netns", "del", l.b).Run()
	})
	run("netns", "add", l.a)
	run("netns", "add", l.b)
	run("link", "add", l.devA, "netns", l.a, "type", "veth", "peer", "name", l.devB, "netns", l.b)
	m := strconv.Itoa(mtu)
	run("-n", l.a, "link", "set", l.devA, "mtu", m, "gso_max_segs", "1", "up")
	run("-n", l.b, "link", "set", l.devB, "mtu", m, "gso_max_segs", "1", "up")
	run("-n", l.a, "link", "set", "lo", "up")
	run("-n", l.b, "link", "set", "lo", "up")
	run("-n", l.a, "addr", "add", "10.77.0.1/24", "dev", l.devA)
	run("-n", l.b, "addr", "add", "10.77.0.2/24", "dev", l.devB)
	return l
}

func requireNft(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft not installed (apt-get install nftables)")
	}
}

func nft(t testing.TB, ns, script string) string {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	if script == "" {
		cmd = exec.Command("ip", "netns", "exec", ns, "nft", "list", "counters")
	}
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nft in %s: %v: %s", ns, err, out)
	}
	return string(out)
}

// watchWire counts, at the netdev ingress hook of dev in namespace ns
// (before IP reassembly), the IPv4 frames that arrive, the IP fragments
// among them, the frames longer than mtu, and the frames within 100 bytes
// of mtu.
func watchWire(t testing.TB, ns, dev string, mtu int) {
	t.Helper()
	requireNft(t)
	nft(t, ns, fmt.Sprintf(`table netdev pcorwire {
	counter frames {}
	counter ipfrags {}
	counter oversize {}
	counter full {}
	chain in {
		type filter hook ingress device %q priority -10;
		ip version 4 counter name frames
		ip frag-off & 0x3fff != 0 counter name ipfrags
		ip length > %d counter name oversize
		ip length > %d counter name full
	}
}`, dev, mtu, mtu-100))
}

// dropRandom makes the netdev ingress hook of dev in namespace ns drop pct
// percent of the IPv4 frames it receives (nft numgen random). The drop
// happens before IP reassembly: it loses frames as a lossy wire does.
// The returned function removes the rule.
func dropRandom(t testing.TB, ns, dev string, pct int) (undo func()) {
	t.Helper()
	requireNft(t)
	nft(t, ns, fmt.Sprintf(`table netdev pcorloss {
	counter dropped {}
	chain in {
		type filter hook ingress device %q priority 0;
		ip version 4 numgen random mod 100 < %d counter name dropped drop
	}
}`, dev, pct))
	return func() { nft(t, ns, "delete table netdev pcorloss") }
}

// wireCounters reads the named nft counters of namespace ns, by name.
func wireCounters(t testing.TB, ns string) map[string]uint64 {
	t.Helper()
	c := map[string]uint64{}
	name := ""
	fields := strings.Fields(nft(t, ns, ""))
	for i, f := range fields {
		switch {
		case f == "counter" && i+1 < len(fields):
			name = fields[i+1]
		case f == "packets" && i+1 < len(fields) && name != "":
			n, err := strconv.ParseUint(fields[i+1], 10, 64)
			if err != nil {
				t.Fatalf("nft counter %s: %q", name, fields[i+1])
			}
			c[name] = n
		}
	}
	return c
}

// inNetns starts the test binary in namespace ns in the given role.
func inNetns(t testing.TB, ns, role string, env ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	return spawn(t, []string{"ip", "netns", "exec", ns}, role, env...)
}

// sinkPeer (process 1) receives messages and checks them against the
// deterministic pattern until tag 0 arrives.
func sinkPeer() int {
	n, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey,
		Listen: []pcor.Listen{{Addr: os.Getenv("PCOR_TEST_LISTEN")}},
		Peers:  []pcor.Peer{{Proc: 0, Addr: os.Getenv("PCOR_TEST_PEER")}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer n.Close()
	fmt.Println("READY")
	th := n.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for {
		m, err := th.Recv(ctx, pcor.Any, pcor.AnyTag)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sink:", err)
			return 1
		}
		if m.Tag == 0 {
			if os.Getenv("PCOR_TEST_VERBOSE") != "" {
				st := n.Stats()[0]
				fmt.Fprintf(os.Stderr, "sink: %d fragments, %d duplicates, drops %v\n", st.FragsRecv, st.Duplicates, st.Drops)
			}
			return 0
		}
		if want := randomBytes(len(m.Data), uint64(m.Tag)); string(want) != string(m.Data) {
			fmt.Fprintln(os.Stderr, "sink: message", m.Tag, "differs")
			return 1
		}
	}
}

// sourcePeer (process 0) sends one message of PCOR_TEST_SIZE bytes and
// prints the time it took to be accepted.
func sourcePeer() int {
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey,
		Listen: []pcor.Listen{{Addr: os.Getenv("PCOR_TEST_LISTEN")}},
		Peers:  []pcor.Peer{{Proc: 1, Addr: os.Getenv("PCOR_TEST_PEER")}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer n.Close()
	size, _ := strconv.Atoi(os.Getenv("PCOR_TEST_SIZE"))
	th := n.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dst := pcor.Addr{Proc: 1, Thread: 0}
	data := randomBytes(size, 7)
	// A small message first, so both sides are up before timing.
	for {
		c, cc := context.WithTimeout(ctx, 200*time.Millisecond)
		err := th.Send(c, dst, 3, randomBytes(10, 3))
		cc()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "source: peer never answered")
			return 1
		}
	}
	start := time.Now()
	if err := th.Send(ctx, dst, 7, data); err != nil {
		fmt.Fprintln(os.Stderr, "source:", err)
		return 1
	}
	el := time.Since(start)
	st := n.Stats()[0]
	fmt.Printf("TIME %d %d %d\n", el.Nanoseconds(), st.Retransmits, st.FragsSent)
	if os.Getenv("PCOR_TEST_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, "source: %d timeouts, %d fast retransmits, %d acks received, %d busy\n", st.Timeouts, st.FastRetrans, st.AcksRecv, st.BusyRecv)
	}
	th.Send(ctx, dst, 0, nil)
	return 0
}

// transfer runs a source in l.a and a sink in l.b and returns the time
// the source took for one message of size bytes, and the source's
// retransmission and fragment counts.
func transfer(t testing.TB, l link, size int) (el time.Duration, retransmits, frags int64) {
	t.Helper()
	sink, sout := inNetns(t, l.b, "sink", "PCOR_TEST_LISTEN=10.77.0.2:7101", "PCOR_TEST_PEER=10.77.0.1:7100")
	if line, err := sout.ReadString('\n'); err != nil || line != "READY\n" {
		t.Fatalf("sink: %q %v", line, err)
	}
	src, out := inNetns(t, l.a, "source", "PCOR_TEST_LISTEN=10.77.0.1:7100", "PCOR_TEST_PEER=10.77.0.2:7101",
		"PCOR_TEST_SIZE="+strconv.Itoa(size))
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "TIME ") {
		t.Fatalf("source: %q %v", line, err)
	}
	f := strings.Fields(line)
	ns, _ := strconv.ParseInt(f[1], 10, 64)
	retransmits, _ = strconv.ParseInt(f[2], 10, 64)
	frags, _ = strconv.ParseInt(f[3], 10, 64)
	if err := src.Wait(); err != nil {
		t.Fatalf("source: %v", err)
	}
	if err := sink.Wait(); err != nil {
		t.Fatalf("sink: %v", err)
	}
	return time.Duration(ns), retransmits, frags
}

// A 64 MiB message crosses a 1,500-byte-MTU link that loses 1% of its
// frames each way intact (the sink checks every byte), the loss happens on
// the wire (frames dropped before IP reassembly, counted by nft), and no
// datagram is larger than the MTU: nothing travels as IP fragments.
// Throughput under loss is measured by BenchmarkLossyLink.
func TestLossyLink(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 64 MiB through namespaces")
	}
	requireNft(t)
	l := netnsPair(t, 1500)
	watchWire(t, l.a, l.devA, l.mtu)
	watchWire(t, l.b, l.devB, l.mtu)
	dropRandom(t, l.a, l.devA, 1)
	dropRandom(t, l.b, l.devB, 1)
	const size = 64 << 20
	el, retransmits, frags := transfer(t, l, size)
	t.Logf("64 MiB in %v (%.1f MB/s), %d retransmits of %d fragments", el, size/el.Seconds()/1e6, retransmits, frags)
	ca, cb := wireCounters(t, l.a), wireCounters(t, l.b)
	t.Logf("wire into a (acks): %v", ca)
	t.Logf("wire into b (data): %v", cb)
	if cb["frames"] < size/1500 {
		t.Errorf("only %d frames carried %d bytes into b: the counters do not see the traffic", cb["frames"], size)
	}
	if cb["dropped"] == 0 {
		t.Error("no data frame was dropped: the link was not lossy")
	}
	if retransmits == 0 {
		t.Error("the sender retransmitted nothing over a lossy link")
	}
	if cb["full"] == 0 {
		t.Errorf("no frame within 100 bytes of the %d-byte MTU: the length rule sees nothing", l.mtu)
	}
	for _, c := range []map[string]uint64{ca, cb} {
		if c["ipfrags"] != 0 || c["oversize"] != 0 {
			t.Errorf("%d IP fragments and %d frames over the %d-byte MTU on the wire", c["ipfrags"], c["oversize"], l.mtu)
		}
	}
}

// BenchmarkLossyLink measures the throughput of a 64 MiB message over a
// 1,500-byte-MTU link between namespaces without loss and with 1% of the
// frames lost each way (dropped before IP reassembly), interleaved, one
// pair per iteration, and reports the median of each and the median,
// lowest and highest per-pair ratio. Run it with -benchtime=Nx.
func BenchmarkLossyLink(b *testing.B) {
	requireNft(b)
	l := netnsPair(b, 1500)
	const size = 64 << 20
	var clean, lossy, ratio []float64
	for i := 0; i < b.N; i++ {
		c, _, _ := transfer(b, l, size)
		undoA := dropRandom(b, l.a, l.devA, 1)
		undoB := dropRandom(b, l.b, l.devB, 1)
		d, retransmits, frags := transfer(b, l, size)
		undoA()
		undoB()
		b.Logf("pair %d: lossless %.1f MB/s, lossy %.1f MB/s, ratio %.2f (%d retransmits of %d fragments)",
			i+1, size/c.Seconds()/1e6, size/d.Seconds()/1e6, c.Seconds()/d.Seconds(), retransmits, frags)
		clean = append(clean, size/c.Seconds()/1e6)
		lossy = append(lossy, size/d.Seconds()/1e6)
		ratio = append(ratio, c.Seconds()/d.Seconds())
	}
	b.ReportMetric(median(clean), "lossless-MB/s")
	b.ReportMetric(median(lossy), "lossy-MB/s")
	b.ReportMetric(median(ratio), "ratio-median")
	b.ReportMetric(slices.Min(ratio), "ratio-min")
	b.ReportMetric(slices.Max(ratio), "ratio-max")
	b.ReportMetric(0, "ns/op")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
