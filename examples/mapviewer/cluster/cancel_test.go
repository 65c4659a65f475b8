package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

// TestCancelStopsDaemonDecoding cancels a view right after its first
// fragment arrives: the daemon, decoding one tile at a time, must drop
// the requests it has not started (cancelled through the viewer's
// cancel messages) rather than decode the whole view for nobody.
func TestCancelStopsDaemonDecoding(t *testing.T) {
	set := copySet(t, halfPaperSet(t), 1, 1)
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

	vctx, cancelView := context.WithTimeout(context.Background(), testRequestTimeout)
	defer cancelView()
	var wg sync.WaitGroup
	var once sync.Once
	n := 0
	for row := range set.Rows {
		for col := range set.Cols {
			n++
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := l.Load(vctx, tiles.ID{Col: col, Row: row}, 1); err == nil {
					once.Do(cancelView) // the client went away
				}
			}()
		}
	}
	wg.Wait()
	if vctx.Err() == nil {
		t.Fatal("no fragment arrived")
	}
	// Wait until the daemon holds nothing and its counts stand still.
	var st DaemonStats
	deadline := time.Now().Add(testRequestTimeout)
	for prev := (DaemonStats{Received: -1}); ; prev = st {
		time.Sleep(100 * time.Millisecond)
		st = d.Stats()
		if st == prev && st.Queued == 0 && st.Decoding == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon still busy: %+v", st)
		}
	}
	t.Logf("%d tiles asked for; daemon: %+v", n, st)
	if st.Received == 0 || st.Decoded > st.Received/2 || st.Cancelled == 0 {
		t.Errorf("daemon decoded %d of the %d requests it received (%d cancelled) after the view was cancelled at its first fragment", st.Decoded, st.Received, st.Cancelled)
	}
}
