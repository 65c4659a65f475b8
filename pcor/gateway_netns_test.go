package pcor_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// topo builds network namespaces for one test and removes them at cleanup,
// also when the test fails.
type topo struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	procs  []*exec.Cmd
}

func newTopo(t *testing.T) *topo {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	for _, c := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s (iproute2) not installed", c)
		}
	}
	tp := &topo{t: t, prefix: fmt.Sprintf("prt%d", os.Getpid()%100000)}
	// Every process is killed after 55 s, which unblocks any read of
	// its output, so that the test ends within its bound.
	watchdog := time.AfterFunc(55*time.Second, func() {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		for _, c := range tp.procs {
			c.Process.Kill()
		}
	})
	t.Cleanup(func() { watchdog.Stop() })
	return tp
}

func (tp *topo) run(name string, args ...string) {
	tp.t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		tp.t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// ns creates namespace prefix+name with loopback up.
func (tp *topo) ns(name string) string {
	ns := tp.prefix + name
	tp.t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	tp.run("ip", "netns", "add", ns)
	tp.run("ip", "-n", ns, "link", "set", "lo", "up")
	return ns
}

// veth links namespaces a and b with interfaces ifa and ifb, addressed
// ipa and ipb in a /24.
func (tp *topo) veth(a, ifa, ipa, b, ifb, ipb string) {
	tp.run("ip", "-n", a, "link", "add", ifa, "type", "veth", "peer", "name", ifb, "netns", b)
	tp.run("ip", "-n", a, "addr", "add", ipa+"/24", "dev", ifa)
	tp.run("ip", "-n", b, "addr", "add", ipb+"/24", "dev", ifb)
	tp.run("ip", "-n", a, "link", "set", ifa, "up")
	tp.run("ip", "-n", b, "link", "set", ifb, "up")
}

// bridge makes a bridge br0 at hubIP/24 in namespace hub and attaches
// each namespace to it by an interface mgmt at the address given.
func (tp *topo) bridge(hub, hubIP string, members map[string]string) {
	tp.run("ip", "-n", hub, "link", "add", "br0", "type", "bridge")
	tp.run("ip", "-n", hub, "addr", "add", hubIP+"/24", "dev", "br0")
	tp.run("ip", "-n", hub, "link", "set", "br0", "up")
	i := 0
	for ns, ip := range members {
		hv := fmt.Sprintf("m%d", i)
		i++
		tp.run("ip", "-n", hub, "link", "add", hv, "type", "veth", "peer", "name", "mgmt", "netns", ns)
		tp.run("ip", "-n", hub, "link", "set", hv, "master", "br0", "up")
		tp.run("ip", "-n", ns, "addr", "add", ip+"/24", "dev", "mgmt")
		tp.run("ip", "-n", ns, "link", "set", "mgmt", "up")
	}
}

// shape limits what interface dev of namespace ns sends to rate with a
// token bucket.
func (tp *topo) shape(ns, dev, rate string) {
	tp.run("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
		"rate", rate, "burst", "64kb", "latency", "100ms")
}

// loss makes namespace ns drop pct percent of the UDP datagrams arriving
// on interface dev.
func (tp *topo) loss(ns, dev string, pct int) {
	tp.t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		tp.t.Skip("nft not installed (apt-get install nftables)")
	}
	rules := fmt.Sprintf(`table inet pcorrtloss {
	chain in {
		type filter hook input priority 0;
		iifname %q meta l4proto udp numgen random mod 100 < %d counter drop
	}
}`, dev, pct)
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		tp.t.Fatalf("nft: %v: %s", err, out)
	}
}

// rtProc is a test binary started in a namespace in a routing role.
type rtProc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader

	exited  chan struct{} // closed once the process has ended
	waitErr error         // how it ended; set before exited is closed
}

// start runs the test binary in namespace ns with PCOR_RT_* variables
// and waits for its READY line.
func (tp *topo) start(name, ns string, env ...string) *rtProc {
	tp.t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tp.t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		tp.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tp.t.Fatal(err)
	}
	tp.mu.Lock()
	tp.procs = append(tp.procs, cmd)
	tp.mu.Unlock()
	p := &rtProc{t: tp.t, name: name, cmd: cmd, in: in, out: bufio.NewReader(outp), exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	tp.t.Cleanup(func() { in.Close(); cmd.Process.Kill(); <-p.exited })
	line, err := p.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY") {
		tp.t.Fatalf("%s: %q %v%s", name, line, err, p.ended())
	}
	return p
}

// ended says how the process ended, if it has (its standard output at
// end of file), for a failure message.
func (p *rtProc) ended() string {
	select {
	case <-p.exited:
		return fmt.Sprintf(" (process ended: %v)", p.waitErr)
	case <-time.After(time.Second):
		return " (process still running)"
	}
}

// node starts a joined node of rank in ns.
func (tp *topo) node(name, ns, coord string, rank int, listen, costs string) *rtProc {
	return tp.start(name, ns, "PCOR_RT_ROLE=node", "PCOR_RT_COORD="+coord, "PCOR_RT_RANK="+strconv.Itoa(rank),
		"PCOR_RT_LISTEN="+listen, "PCOR_RT_COSTS="+costs)
}

// do sends one command and returns its answer lines, the last one
// included. An ERR answer fails the test unless the command starts with
// '?' (which is removed).
func (p *rtProc) do(command string) []string {
	p.t.Helper()
	mayFail := strings.HasPrefix(command, "?")
	command = strings.TrimPrefix(command, "?")
	if _, err := fmt.Fprintln(p.in, command); err != nil {
		p.t.Fatalf("%s: %s: %v", p.name, command, err)
	}
	var lines []string
	for {
		line, err := p.out.ReadString('\n')
		if err != nil {
			p.t.Fatalf("%s: %s: %v after %q%s", p.name, command, err, lines, p.ended())
		}
		line = strings.TrimSuffix(line, "\n")
		lines = append(lines, line)
		switch {
		case strings.HasPrefix(line, "ERR"):
			if !mayFail {
				p.t.Fatalf("%s: %s: %s", p.name, command, line)
			}
			return lines
		case strings.HasPrefix(line, "OK"), line == "END":
			return lines
		}
	}
}

// portStats is one PORT line of the stats command.
type portStats struct{ frags, bytes, forwarded, retrans, noRoute, tooBig uint64 }

func (p *rtProc) stats() []portStats {
	p.t.Helper()
	var out []portStats
	for _, l := range p.do("stats") {
		f := strings.Fields(l)
		if len(f) != 8 || f[0] != "PORT" {
			continue
		}
		v := make([]uint64, 6)
		for i := range v {
			v[i], _ = strconv.ParseUint(f[i+2], 10, 64)
		}
		out = append(out, portStats{v[0], v[1], v[2], v[3], v[4], v[5]})
	}
	return out
}

func sumForwarded(s []portStats) (f uint64) {
	for _, x := range s {
		f += x.forwarded
	}
	return f
}

// transfer3 has src send sizes to dst (tag) while dst receives and
// checks them; it returns the sender's elapsed time.
func transfer3(t *testing.T, src, dst *rtProc, srcProc, dstProc, tag int, sizes []int) time.Duration {
	t.Helper()
	list := make([]string, len(sizes))
	for i, s := range sizes {
		list[i] = strconv.Itoa(s)
	}
	recvDone := make(chan []string, 1)
	go func() {
		fmt.Fprintf(dst.in, "recv %d %d %s\n", srcProc, tag, strings.Join(list, " "))
		line, _ := dst.out.ReadString('\n')
		recvDone <- []string{strings.TrimSpace(line)}
	}()
	ans := src.do(fmt.Sprintf("send %d %d %s", dstProc, tag, strings.Join(list, " ")))
	r := <-recvDone
	if !strings.HasPrefix(r[0], "OK") {
		t.Fatalf("receiver: %q%s", r[0], dst.ended())
	}
	ns, _ := strconv.ParseInt(strings.Fields(ans[len(ans)-1])[1], 10, 64)
	return time.Duration(ns)
}

// routeLines returns the table lines for destination dst.
func routeLines(table []string, dst int) []string {
	var out []string
	for _, l := range table {
		f := strings.Fields(l)
		if len(f) > 1 && f[0] == strconv.Itoa(dst) {
			out = append(out, l)
		}
	}
	return out
}

// A and B share network ab, B and C network bc (shaped to 100 Mbit/s), A
// and C nothing; the directory is on a management bridge in a hub
// namespace that pcor's ports do not use. C joins after A and B: A's table
// gains C through B. Messages from 1 B to 16 MiB pass from A to C through
// B intact and in order, also with 5% loss on the ab hop. Killing B fails
// A's pending send to C with ErrUnreachable (no path) and to B with
// ErrPeerDown.
func TestGatewayNetns(t *testing.T) {
	tp := newTopo(t)
	hub, a, b, c := tp.ns("hub"), tp.ns("a"), tp.ns("b"), tp.ns("c")
	tp.bridge(hub, "10.90.0.1", map[string]string{a: "10.90.0.11", b: "10.90.0.12", c: "10.90.0.13"})
	tp.veth(a, "ab0", "10.91.0.1", b, "ab1", "10.91.0.2")
	tp.veth(b, "bc1", "10.92.0.2", c, "bc2", "10.92.0.3")
	tp.shape(b, "bc1", "100mbit")
	tp.shape(c, "bc2", "100mbit")
	const coord = "10.90.0.1:7400"
	tp.start("directory", hub, "PCOR_RT_ROLE=dir", "PCOR_RT_COORD="+coord)
	pa := tp.node("A", a, coord, 0, "10.91.0.1:7401@ab", "")
	pb := tp.node("B", b, coord, 1, "10.91.0.2:7402@ab,10.92.0.2:7403@bc", "0s/0,50us/12.5e6")
	pa.do("waitroute 1 1")
	if l := routeLines(pa.do("routes"), 2); len(l) != 0 {
		t.Fatalf("A routes to C before it joined: %q", l)
	}

	pc := tp.node("C", c, coord, 2, "10.92.0.3:7404@bc", "50us/12.5e6")
	pa.do("waitroute 2 1")
	table := pa.do("routes")
	t.Logf("A's table after C joined:\n%s", strings.Join(table[:len(table)-1], "\n"))
	for _, l := range routeLines(table, 2) {
		f := strings.Fields(l)
		// DST SIZE PORT FABRIC NETWORK NEXT ADDR HOPS ...
		if f[4] != "ab" || f[5] != "1" || f[6] != "10.91.0.2:7402" || f[7] != "2" {
			t.Fatalf("A's route to C: %q", l)
		}
	}
	// Each process learns of C's join from its own directory stream: B
	// (which sends to C directly and forwards A's datagrams to it) may
	// hear of it after A did.
	pb.do("waitroute 2 1")
	pc.do("waitroute 0 1")

	sizes := []int{1, 100, 1472, 64 << 10, 1 << 20, 2 << 20}
	total := 0
	for _, s := range sizes {
		total += s
	}
	// Baseline: B to C directly, over the same shaped link.
	direct := transfer3(t, pb, pc, 1, 2, 4, sizes)
	fwd0 := sumForwarded(pb.stats())
	ra := pa.stats()[0].retrans
	el := transfer3(t, pa, pc, 0, 2, 5, sizes)
	fwd1 := sumForwarded(pb.stats())
	t.Logf("B to C directly: %d bytes in %v (%.1f MB/s)", total, direct, float64(total)/direct.Seconds()/1e6)
	t.Logf("A to C through B: %v (%.1f MB/s, %.2f of direct); B forwarded %d datagrams, A retransmitted %d", el,
		float64(total)/el.Seconds()/1e6, direct.Seconds()/el.Seconds(), fwd1-fwd0, pa.stats()[0].retrans-ra)
	if fwd1-fwd0 < uint64(total/1472) {
		t.Fatalf("B forwarded %d datagrams for %d bytes", fwd1-fwd0, total)
	}
	for i, s := range pb.stats() {
		if s.tooBig != 0 || s.noRoute != 0 {
			t.Fatalf("B port %d dropped datagrams: %+v", i, s)
		}
	}

	tp.loss(b, "ab1", 5)
	ra0 := pa.stats()[0].retrans
	el = transfer3(t, pa, pc, 0, 2, 6, sizes)
	fwd2 := sumForwarded(pb.stats())
	t.Logf("with 5%% loss on ab: %v (%.1f MB/s), A retransmitted %d, B forwarded %d", el, float64(total)/el.Seconds()/1e6,
		pa.stats()[0].retrans-ra0, fwd2-fwd1)
	if fwd2-fwd1 < uint64(total/1472) {
		t.Fatalf("B forwarded %d datagrams for %d bytes with loss", fwd2-fwd1, total)
	}

	// B and C stop answering, so A's sends stay pending; then B dies.
	pb.cmd.Process.Signal(syscall.SIGSTOP)
	pc.cmd.Process.Signal(syscall.SIGSTOP)
	pa.do("isend 2 7 1048576")
	pa.do("isend 1 7 1048576")
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	pb.cmd.Process.Kill()
	res := pa.do("waitall 10")
	took := time.Since(killed)
	pc.cmd.Process.Signal(syscall.SIGCONT)
	t.Logf("after killing B (%v): %q", took, res)
	want := []string{"RESULT 2 unreachable:no_path", "RESULT 1 peerdown", "END"}
	if strings.Join(res, "|") != strings.Join(want, "|") {
		t.Fatalf("pending sends after B died: %q, want %q", res, want)
	}
	pa.do("waitroute 2 0")
	if l := routeLines(pa.do("routes"), 2); len(l) != 1 || !strings.Contains(l[0], "unreachable") {
		t.Fatalf("A's table after B died: %q", l)
	}
}

// P and Q share two networks: lat (shaped to 20 Mbit/s, announced 20 µs
// and 2.5 MB/s) and bulk (unshaped, announced 300 µs and 1 GB/s). The model
// crosses over at 702 bytes: small messages leave on lat, large on bulk,
// as the per-port byte counters show.
func TestTwoNetworksNetns(t *testing.T) {
	tp := newTopo(t)
	p, q := tp.ns("p"), tp.ns("q")
	tp.veth(p, "lat0", "10.93.0.1", q, "lat1", "10.93.0.2")
	tp.veth(p, "blk0", "10.94.0.1", q, "blk1", "10.94.0.2")
	tp.veth(p, "mgt0", "10.95.0.1", q, "mgt1", "10.95.0.2")
	tp.shape(p, "lat0", "20mbit")
	tp.shape(q, "lat1", "20mbit")
	const coord = "10.95.0.1:7500"
	tp.start("directory", p, "PCOR_RT_ROLE=dir", "PCOR_RT_COORD="+coord)
	const costs = "20us/2.5e6,300us/1e9"
	pp := tp.node("P", p, coord, 0, "10.93.0.1:7501@lat,10.94.0.1:7502@bulk", costs)
	pq := tp.node("Q", q, coord, 1, "10.93.0.2:7503@lat,10.94.0.2:7504@bulk", costs)
	pp.do("waitroute 1 1")
	pq.do("waitroute 0 1")
	table := pp.do("routes")
	t.Logf("P's table:\n%s", strings.Join(table[:len(table)-1], "\n"))

	check := func(size, count, tag int) {
		t.Helper()
		f := strings.Fields(pp.do(fmt.Sprintf("lookup 1 %d", size))[0])
		port, _ := strconv.Atoi(f[1])
		other := 1 - port
		sizes := make([]int, count)
		for i := range sizes {
			sizes[i] = size
		}
		s0 := pp.stats()
		el := transfer3(t, pp, pq, 0, 1, tag, sizes)
		s1 := pp.stats()
		on, off := s1[port].bytes-s0[port].bytes, s1[other].bytes-s0[other].bytes
		t.Logf("%d x %d B in %v: predicted port %d (%s) sent %d bytes, port %d sent %d", count, size, el, port, f[2], on, other, off)
		if on < uint64(size*count) || off > uint64(size*count)/100 {
			t.Fatalf("%d-byte messages: predicted port %d sent %d bytes, the other %d", size, port, on, off)
		}
	}
	check(200, 100, 1)
	check(1<<20, 8, 2)
	if l := pp.do("lookup 1 200"); !strings.Contains(l[0], " lat ") {
		t.Fatalf("small messages routed %q", l)
	}
	if l := pp.do("lookup 1 1048576"); !strings.Contains(l[0], " bulk ") {
		t.Fatalf("large messages routed %q", l)
	}
}
