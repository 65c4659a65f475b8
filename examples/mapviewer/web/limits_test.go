package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/view"
)

// heapBytes is the bytes of live and not yet swept heap objects.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// peakSampler records the largest heapBytes seen until stopped.
func peakSampler() (stop func() int64) {
	var peak atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(2 * time.Millisecond)
		defer tk.Stop()
		for {
			if h := heapBytes(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-tk.C:
			case <-done:
				return
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// 16 clients ask at once for different 1024x1024 views at 1:1, over real
// HTTP: the server renders at most MaxRenders at a time, refuses what its
// queue cannot hold with 429 and Retry-After, every client gets its view
// by retrying, and the heap stays within the bound the limits set. The
// memory is given back once they are served.
func TestParallelRendersBoundedMemory(t *testing.T) {
	set := smallSet(t)
	const cacheBytes, maxRenders = 8 << 20, 2
	srv := &Server{Set: set, Loader: loader.NewCache(loader.NewLocal(set, 0), cacheBytes), MaxRenders: maxRenders, MaxQueue: 4, RenderTimeout: 10 * time.Minute}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	// One view: a 4 MB bitmap and its 5x5 fragments of 300 KB (7.5 MB).
	const perRender = 12 << 20
	runtime.GC()
	base := heapBytes()
	stop := peakSampler()

	const clients = 16
	var wg sync.WaitGroup
	var refused, retryAfter atomic.Int64
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := fmt.Sprintf("%s/render?x=%d&y=%d&s=1&w=1024&h=1024", ts.URL, (i%4)*960, (i/4)*960)
			// Under the race detector on a loaded machine a view takes
			// seconds, and a client may lose several retries in a row.
			deadline := time.Now().Add(20 * time.Minute)
			for time.Now().Before(deadline) {
				r, err := http.Get(q)
				if err != nil {
					errs <- err
					return
				}
				n, _ := io.Copy(io.Discard, r.Body)
				r.Body.Close()
				switch r.StatusCode {
				case http.StatusOK:
					if n < 1000 {
						errs <- fmt.Errorf("%s: %d bytes", q, n)
					}
					return
				case http.StatusTooManyRequests:
					refused.Add(1)
					s, err := strconv.Atoi(r.Header.Get("Retry-After"))
					if err != nil || s < 1 {
						errs <- fmt.Errorf("429 with Retry-After %q", r.Header.Get("Retry-After"))
						return
					}
					retryAfter.Store(int64(s))
					time.Sleep(time.Duration(s) * time.Second)
				default:
					errs <- fmt.Errorf("%s: %s", q, r.Status)
					return
				}
			}
			errs <- fmt.Errorf("%s: not served in 20 minutes", q)
		}()
	}
	wg.Wait()
	peak := stop() - base
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := srv.Stats()
	if st.Rendered != clients {
		t.Errorf("rendered %d views, want %d (%+v)", st.Rendered, clients, st)
	}
	if refused.Load() == 0 || st.Rejected != refused.Load() {
		t.Errorf("%d refused by the clients' count, %d by the server's: want some, and equal", refused.Load(), st.Rejected)
	}
	// Live memory is at most the cache and MaxRenders views; the heap
	// holds up to twice the live memory between collections (GOGC=100).
	bound := int64(2 * (cacheBytes + maxRenders*perRender))
	t.Logf("heap peak %d MB over the %d MB before (bound %d MB); %d requests refused with 429", peak>>20, base>>20, bound>>20, refused.Load())
	if peak > bound {
		t.Errorf("heap grew by %d MB serving %d parallel views, bound %d MB", peak>>20, clients, bound>>20)
	}
	runtime.GC()
	debug.FreeOSMemory()
	if after := heapBytes() - base; after > cacheBytes+8<<20 {
		t.Errorf("%d MB still held after the views were served (cache bound %d MB)", after>>20, cacheBytes>>20)
	}
}

// countLoads counts the loads of the loader it wraps that went through.
type countLoads struct {
	inner   loader.Loader
	started atomic.Int64
	loaded  atomic.Int64
}

func (c *countLoads) Load(ctx context.Context, id tiles.ID, scale int) (loader.Fragment, error) {
	c.started.Add(1)
	f, err := c.inner.Load(ctx, id, scale)
	if err == nil {
		c.loaded.Add(1)
	}
	return f, err
}

// A client that goes away cancels its render: the tiles not yet loaded
// are not loaded, and the server counts the render canceled.
func TestRenderCanceledWhenClientGoes(t *testing.T) {
	set := smallSet(t)
	cl := &countLoads{inner: loader.NewLocal(set, 1)}
	srv := &Server{Set: set, Loader: cl, RenderTimeout: 10 * time.Minute}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	p, err := view.At(set, view.Region{W: 2048, H: 2048}, 1)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(len(p.Tiles))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for cl.loaded.Load() < 3 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/render?x=0&y=0&s=1&w=2048&h=2048", nil)
	asked := time.Now()
	if r, err := http.DefaultClient.Do(req); err == nil {
		r.Body.Close()
		t.Fatalf("the request was not canceled: %s", r.Status)
	}
	// The render sees the cancel when the load under way returns. A load
	// of the race-detected build can take seconds on a loaded machine, so
	// the wait is 20 s plus the time the first 3 loads took.
	left := time.Now()
	wait := 20*time.Second + left.Sub(asked)
	for srv.Stats().Canceled == 0 {
		if time.Since(left) > wait {
			t.Fatalf("no render canceled %v after the client left (3 loads took %v): %+v, %d of %d tiles loaded",
				wait.Round(time.Millisecond), left.Sub(asked).Round(time.Millisecond), srv.Stats(), cl.loaded.Load(), total)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Loads under way when the client left finish; no other starts.
	time.Sleep(50 * time.Millisecond)
	if n := cl.loaded.Load(); n > total/2 {
		t.Errorf("%d of %d tiles loaded for a view whose client left after 3", n, total)
	}
	if st := srv.Stats(); st.Rendered != 0 || st.Rendering != 0 {
		t.Errorf("stats after the cancel: %+v", st)
	}
	t.Logf("%d of %d tiles loaded", cl.loaded.Load(), total)
}
