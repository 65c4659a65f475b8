package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

// TestCancelStopsDaemonDecoding asks one daemon, decoding one tile at a
// time, for 300 large tiles at once, and cancels the view once the daemon
// holds every request: it must drop the requests it has not started
// (cancelled through the viewer's cancel messages) rather than decode the
// whole view for nobody.
func TestCancelStopsDaemonDecoding(t *testing.T) {
	// Four tiles of 1280x960: a decode takes milliseconds, far longer
	// than a request or a cancel takes to arrive. At 1:4 the replies of
	// the whole view fit the viewer's receive budget.
	o := tiles.DefaultGenOptions(t.TempDir())
	o.Cols, o.Rows, o.TileW, o.TileH = 2, 2, 1280, 960
	set, err := tiles.Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(t, 2)
	ctx, stop := context.WithCancel(context.Background())
	dp, err := a.join(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Node: dp.Node, Set: set, Owned: []int{0}, Workers: 1}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("daemon: %v", err)
		}
		dp.Close()
	})
	_, l := a.viewer(t, set)
	l.Strategy = Primary // every request goes out at once: the daemon holds them all

	const n = 300
	vctx, cancelView := context.WithTimeout(context.Background(), testRequestTimeout)
	defer cancelView()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Load(vctx, tiles.ID{Col: i % 2, Row: i / 2 % 2}, 4)
		}()
	}
	// The client goes away once the daemon has every request.
	deadline := time.Now().Add(testRequestTimeout)
	for d.Stats().Received < n {
		if time.Now().After(deadline) {
			t.Fatalf("daemon received %+v", d.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	cancelView()
	wg.Wait()
	// Wait until the daemon holds nothing and its counts stand still,
	// or has decoded more than half the view.
	var st DaemonStats
	for prev := (DaemonStats{Received: -1}); ; prev = st {
		time.Sleep(100 * time.Millisecond)
		st = d.Stats()
		if st == prev && st.Queued == 0 && st.Decoding == 0 || st.Decoded > n/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon still busy: %+v", st)
		}
	}
	t.Logf("%d tiles asked for; daemon: %+v", n, st)
	if st.Received != n || st.Decoded > n/2 || st.Cancelled < n/2 {
		t.Errorf("daemon decoded %d of the %d requests it received (%d cancelled) after the view was cancelled", st.Decoded, st.Received, st.Cancelled)
	}
}
