package probe

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/perfmodel"
	"github.com/pcor-go/pcor/routing"
)

// mesh starts n nodes on loopback, each a peer of every other, closed
// when the test ends.
func mesh(t *testing.T, n int) []*pcor.Node {
	t.Helper()
	var nodes []*pcor.Node
	for p := range n {
		node, err := pcor.NewNode(pcor.Config{Proc: pcor.ProcID(p), JobKey: 0x70726f6265, Listen: []pcor.Listen{{}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { node.Close() })
		nodes = append(nodes, node)
	}
	for i, node := range nodes {
		for j, m := range nodes {
			if i != j {
				if err := node.AddPeer(pcor.Peer{Proc: pcor.ProcID(j), Addr: m.Endpoints()[0].Addr}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return nodes
}

func pair(t *testing.T) (*pcor.Node, *pcor.Node) {
	t.Helper()
	nodes := mesh(t, 2)
	return nodes[0], nodes[1]
}

// runEcho runs Echo on th until ctx ends or a TagStop comes; wg counts it.
func runEcho(t *testing.T, ctx context.Context, wg *sync.WaitGroup, th *pcor.Thread) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := Echo(ctx, th); err != nil {
			t.Error(err)
		}
	}()
}

func TestMeasureAndPassive(t *testing.T) {
	a, b := pair(t)
	// The context only ends a hang: 40 round trips of up to 2 MiB under
	// the race detector took over 20 s at load 30-36.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	echo := b.NewThread()
	var wg sync.WaitGroup
	runEcho(t, ctx, &wg, echo)
	th := a.NewThread()
	var prices routing.Prices
	l := routing.Link{Peer: 1, Fabric: "udp", Network: "lo"}
	// Sizes up to 2 MiB, so that the per-byte cost stands well above the
	// waits for a CPU of a loaded machine and the fitted slope is positive.
	start := time.Now()
	if err := Measure(ctx, th, echo.Addr(), l, &prices, []int{0, 4096, 512 << 10, 2 << 20}, 10); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	// Each sample is half a round trip, one after another: together they
	// fit in the time Measure took.
	var sum time.Duration
	for _, s := range prices.Samples(l) {
		sum += 2 * time.Duration(s.T*1e9)
	}
	if sum > took || sum <= 0 {
		t.Fatalf("40 round trips timed %v in all, in %v", sum, took)
	}
	if got := prices.Refit(); len(got) != 1 || got[0] != l {
		t.Fatalf("repriced %v", got)
	}
	fit, ok := prices.Fit(l)
	if !ok || fit.Points != 4 || !(fit.Coef[1] > 0) {
		t.Fatalf("fit %v", fit)
	}
	// The price is the fit: its line, or, where that line misses some
	// size's median by more than the tolerance, two regimes, each a line
	// through two sizes' medians. (How fast loopback is, is not judged: on
	// a loaded machine the medians are mostly waits for a CPU, and a line
	// through 0 B and 4 KiB has any slope, down to some 100 KB/s.)
	c := prices.Links()[l]
	if c.Latency <= 0 || !(c.Bandwidth > 0) || c.Large.From > 0 && !(c.Large.Bandwidth > 0) {
		t.Fatalf("loopback priced %+v", c)
	}
	for _, o := range perfmodel.Summarize(prices.Samples(l), perfmodel.Rule{}) {
		got, want := c.Time(int64(o.N)), o.Median*1e9
		if c.Large.From == 0 {
			if o.N == 0 && fit.Coef[0] <= 0 {
				continue // no fixed cost measurable: priced 1 ns
			}
			want = fit.Predict(o.N, 0).T * 1e9
		} else if int64(o.N) < c.Large.From && math.IsInf(c.Bandwidth, 1) && o.N > 0 {
			continue // the small sizes' medians fell: no per-byte cost measurable
		}
		if math.Abs(got-want) > 1e-6*math.Abs(want)+1 {
			t.Fatalf("loopback priced %+v: %.0f B at %.0f ns, want %.0f ns (fit %v, median %.0f ns)",
				c, o.N, got, want, fit, o.Median*1e9)
		}
	}
	// Passive samples from blocking sends join the link's samples.
	sink := b.NewThread()
	s := Sender{Thread: th, Prices: &prices, Link: l}
	go func() {
		for range 5 {
			sink.Recv(ctx, pcor.Any, 7)
		}
	}()
	for range 5 {
		if err := s.Send(ctx, sink.Addr(), 7, make([]byte, 64<<10)); err != nil {
			t.Fatal(err)
		}
	}
	prices.Refit()
	if fit2, _ := prices.Fit(l); fit2.Points != 5 {
		t.Fatalf("passive 64 KiB samples not recorded: %d sizes", fit2.Points)
	}
	if err := th.Send(ctx, echo.Addr(), TagStop, nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

// An Echo waiting for probes leaves its node's port alone: it neither
// drives it nor counts as a waiter of it. A Recv would take the port for
// its first 20 ms and count as a waiter after, and while a thread waits
// the engine keeps the port with its dispatcher, so that the node's own
// probes, sent right after its Echo started, had every answer received by
// the dispatcher and handed over to the probing thread (a wake-up each,
// which priced a link measured right after its process's Echo started up
// to twice its latency). Nothing else uses node a's port while its Echo
// waits, so any lead is the Echo's.
func TestEchoLeavesPortToProbes(t *testing.T) {
	a, b := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	before := a.Stats()[0]
	echoes := []*pcor.Thread{a.NewThread(), b.NewThread()}
	for _, th := range echoes {
		runEcho(t, ctx, &wg, th)
	}
	// A Recv leads the port as soon as it waits; the Echo starts within
	// the look (on a loaded machine it may not, and the look proves less).
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if st := a.Stats()[0]; st.Leads != before.Leads || st.GiveBacks != before.GiveBacks {
			t.Fatalf("the waiting Echo drove its node's port: %d leads, %d given back",
				st.Leads-before.Leads, st.GiveBacks-before.GiveBacks)
		}
	}
	th := a.NewThread()
	before = a.Stats()[0]
	const trips = 200
	buf := make([]byte, 16)
	for range trips {
		if _, err := RoundTrip(ctx, th, echoes[1].Addr(), buf); err != nil {
			t.Fatal(err)
		}
	}
	after := a.Stats()[0]
	// Each round trip's answer is received by the probing thread, which
	// drives the port while it waits (ThreadBatches), or by the
	// dispatcher. Many fall to the dispatcher on a loaded machine (an
	// answer that comes before its receive waits, or one so late that the
	// driver gave the port back), and on a loaded machine the port also
	// receives batches that are no answer (acknowledgements sent alone,
	// retransmissions): the dispatcher's count exceeded the 200 round
	// trips at load 40. While a waiter keeps the port with the dispatcher
	// no thread drives it, and the probing thread receives nothing itself.
	own, d := after.ThreadBatches-before.ThreadBatches, after.DispatcherBatches-before.DispatcherBatches
	t.Logf("%d batches received by the probing thread, %d by the dispatcher, for %d round trips (leads %d, given back %d)",
		own, d, trips, after.Leads-before.Leads, after.GiveBacks-before.GiveBacks)
	if own < trips/4 {
		t.Errorf("the probing thread received %d batches itself in %d round trips (the dispatcher %d)", own, trips, d)
	}
	for _, e := range echoes {
		if err := th.Send(ctx, e.Addr(), TagStop, nil); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// An Echo answers every node that probes it, also while another keeps
// probing: probes from one sender do not hold back another's until they
// stop (a link measured right after, or while, another node measured its
// own link to the same Echo waited for that node to be silent).
func TestEchoAnswersEverySender(t *testing.T) {
	nodes := mesh(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	echo := nodes[2].NewThread()
	var wg sync.WaitGroup
	runEcho(t, ctx, &wg, echo)
	// The first sender probes until the second has its answer, at most
	// maxTrips round trips.
	const maxTrips = 20000
	first, second := nodes[0].NewThread(), nodes[1].NewThread()
	started, answered := make(chan struct{}), make(chan struct{})
	stillProbing := make(chan bool, 1)
	var once sync.Once
	wg.Add(1)
	go func() {
		defer wg.Done()
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
			if _, err := RoundTrip(ctx, first, echo.Addr(), buf); err != nil {
				t.Error(err)
				break
			}
		}
		stillProbing <- false
	}()
	<-started
	if _, err := RoundTrip(ctx, second, echo.Addr(), make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	close(answered)
	if !<-stillProbing {
		t.Errorf("the second sender was answered only after the first stopped probing (%d round trips)", maxTrips)
	}
	if err := first.Send(ctx, echo.Addr(), TagStop, nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}
