package pcor

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/routing"
)

// pricedPair starts a directory for two processes and joins them with
// two loopback ports each, network "a" announced as far cheaper (0.1 µs,
// 1 TB/s) than "b" (2 µs, 100 GB/s), through FromEnv with PCOR_PRICES
// set to prices.
func pricedPair(t *testing.T, ctx context.Context, prices string) [2]*Node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const key = 0x70726963
	srv, err := directory.NewServer(ln, directory.ServerConfig{JobKey: key, Size: 2, HeartbeatTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	t.Setenv(directory.EnvCoord, ln.Addr().String())
	t.Setenv(directory.EnvJobKey, directory.FormatJobKey(key))
	t.Setenv(directory.EnvSize, "2")
	t.Setenv(directory.EnvDirectory, directory.ServeNever)
	t.Setenv(directory.EnvListen, "127.0.0.1:0@a;latency=100ns;bandwidth=1e12,127.0.0.1:0@b;latency=2us;bandwidth=1e11")
	t.Setenv(EnvPrices, prices)
	var nodes [2]*Node
	for r := range nodes {
		t.Setenv(directory.EnvRank, strconv.Itoa(r))
		n, err := FromEnv(ctx, JoinConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes[r] = n
	}
	for _, n := range nodes {
		if err := n.Directory().Wait(ctx, 2); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// TestFromEnvKeepsPrices: two processes started from the environment
// with PCOR_PRICES=200ms measure their links by themselves, nobody
// running an echo or a keeper: a pcor message over loopback UDP takes
// microseconds whatever the network's name, so within a few rounds the
// route from 0 to 1 carries the measured figures of the link it takes,
// not the 0.1 µs announced for "a".
func TestFromEnvKeepsPrices(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nodes := pricedPair(t, ctx, "200ms")
	prices := nodes[0].mem.prices
	if prices == nil {
		t.Fatal("a node from the environment has no link prices")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rt, ok := nodes[0].Routes().Lookup(1, 16)
		l := routing.Link{Peer: 1, Fabric: rt.Fabric, Network: rt.Network}
		measured, priced := prices.Links()[l]
		if ok && priced && rt.Latency == measured.Latency && rt.Latency > time.Microsecond {
			t.Logf("route over %s at its measured %v", rt.Network, rt.Latency)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: route %+v, measured prices %v", rt, prices.Links())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSendsArePassiveSamples: on a node that measures its links, blocking
// sends of real traffic are recorded as samples of the link they take,
// once the link has a fit from its probes.
func TestSendsArePassiveSamples(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nodes := pricedPair(t, ctx, "1h")
	// The first round prices "a" from measurement, which moves the
	// routes to "b"; the second measures "b".
	for range 2 {
		if _, err := nodes[0].MeasureLinks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rt, ok := nodes[0].Routes().Lookup(1, 8000)
	if !ok {
		t.Fatal("no route from 0 to 1")
	}
	l := routing.Link{Peer: 1, Fabric: rt.Fabric, Network: rt.Network}
	prices := nodes[0].mem.prices
	if _, ok := prices.Fit(l); !ok {
		t.Fatalf("link %v not fitted after MeasureLinks", l)
	}
	a, b := nodes[0].NewThread(), nodes[1].NewThread()
	const sends = 20 * passiveEvery
	done := make(chan error, 1)
	go func() {
		for range sends {
			if _, err := b.Recv(ctx, a.Addr(), 9); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	buf := make([]byte, 8000)
	for range sends {
		if err := a.Send(ctx, b.Addr(), 9, buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The node's own first round of measurements (priceFirst after
	// Join) may come during the sends, on a loaded machine, and move the
	// route between the two links: a sample goes to the link the send
	// took, so they are counted over both.
	n, per := 0, map[string]int{}
	for _, network := range []string{"a", "b"} {
		ln := routing.Link{Peer: 1, Fabric: rt.Fabric, Network: network}
		for _, s := range prices.Samples(ln) {
			if s.N == 8000 {
				n++
				per[network]++
			}
		}
	}
	if n != sends/passiveEvery {
		t.Fatalf("%d samples of the %d sends of 8000 B (by network: %v; route at the start on %v)", n, sends, per, l)
	}
}

func TestParsePriceEvery(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{{"", DefaultPriceEvery, true}, {"off", -1, true}, {"0", -1, true}, {"5s", 5 * time.Second, true},
		{"-1s", 0, false}, {"often", 0, false}} {
		got, err := ParsePriceEvery(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParsePriceEvery(%q) = %v, %v; want %v (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
}

// TestPriceEchoAnswersEverySender: while one process probes a node's
// PriceThread in a burst, a second process's probe is answered too, not
// only once the first has been silent for echoBurst. The first prober
// goes on until the second has its answer, at most maxTrips round trips.
func TestPriceEchoAnswersEverySender(t *testing.T) {
	var nodes []*Node
	for p := range 3 {
		n, err := NewNode(Config{Proc: ProcID(p), JobKey: 0x6563686f, Listen: []Listen{{}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	for i, n := range nodes {
		for j, m := range nodes {
			if i != j {
				if err := n.AddPeer(Peer{Proc: ProcID(j), Addr: m.Endpoints()[0].Addr}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	nodes[2].startPricer(0) // the echo alone; Close stops it
	echo := Addr{Proc: 2, Thread: PriceThread}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	roundTrip := func(th *Thread, buf []byte) error {
		if err := th.Send(ctx, echo, 7, buf); err != nil {
			return err
		}
		_, err := th.RecvInto(ctx, echo, 7, buf)
		return err
	}
	const maxTrips = 20000
	first, second := nodes[0].NewThread(), nodes[1].NewThread()
	started, answered := make(chan struct{}), make(chan struct{})
	stillProbing := make(chan bool, 1)
	var once sync.Once
	go func() {
		defer once.Do(func() { close(started) }) // also when a round trip fails early
		buf := make([]byte, 16)
		for i := range maxTrips {
			if i == 20 {
				once.Do(func() { close(started) })
			}
			select {
			case <-answered:
				stillProbing <- true
				return
			default:
			}
			if err := roundTrip(first, buf); err != nil {
				t.Error(err)
				break
			}
		}
		stillProbing <- false
	}()
	<-started
	if err := roundTrip(second, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	close(answered)
	if !<-stillProbing {
		t.Errorf("the second prober was answered only after the first stopped (%d round trips)", maxTrips)
	}
}
