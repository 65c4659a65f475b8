package loader

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

func genSet(t *testing.T, nodes, replicas int) tiles.Set {
	t.Helper()
	o := tiles.DefaultGenOptions(t.TempDir())
	o.Cols, o.Rows, o.TileW, o.TileH, o.Nodes, o.Replicas = 3, 2, 40, 20, nodes, replicas
	s, err := tiles.Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLocalFallsBackToReplica(t *testing.T) {
	s := genSet(t, 3, 2)
	id := tiles.ID{Col: 1, Row: 1}
	l := NewLocal(s, 2)
	want, err := l.Load(context.Background(), id, 2)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(s.Path(id, s.Holders(id)[0]))
	got, err := l.Load(context.Background(), id, 2)
	if err != nil {
		t.Fatalf("replica not used: %v", err)
	}
	if string(got.Img.Pix) != string(want.Img.Pix) || got.Source != "local" {
		t.Errorf("replica fragment differs (source %q)", got.Source)
	}
	os.Remove(s.Path(id, s.Holders(id)[1]))
	if _, err := l.Load(context.Background(), id, 2); !errors.Is(err, tiles.ErrMissing) {
		t.Errorf("no copy left: %v, want ErrMissing", err)
	}
}

func TestLocalHonoursContext(t *testing.T) {
	s := genSet(t, 1, 1)
	l := NewLocal(s, 1)
	l.sem <- struct{}{} // the only slot is busy
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Load(ctx, tiles.ID{}, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

type countingLoader struct {
	inner Loader
	n     atomic.Int64
	gate  chan struct{}
}

func (c *countingLoader) Load(ctx context.Context, id tiles.ID, scale int) (Fragment, error) {
	c.n.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	return c.inner.Load(ctx, id, scale)
}

func TestCacheMergesAndEvicts(t *testing.T) {
	s := genSet(t, 1, 1)
	cl := &countingLoader{inner: NewLocal(s, 0), gate: make(chan struct{})}
	fragBytes := int64(20 * 10 * 4) // 1:2 fragment of a 40x20 tile
	c := NewCache(cl, 2*fragBytes)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Load(context.Background(), tiles.ID{}, 2); err != nil {
				t.Error(err)
			}
		}()
	}
	close(cl.gate)
	wg.Wait()
	if n := cl.n.Load(); n != 1 {
		t.Errorf("10 concurrent loads of one fragment reached the loader %d times", n)
	}
	f, err := c.Load(context.Background(), tiles.ID{}, 2)
	if err != nil || f.Source != "cache (local)" {
		t.Errorf("cached load: %q %v", f.Source, err)
	}
	c.Load(context.Background(), tiles.ID{Col: 1}, 2)
	c.Load(context.Background(), tiles.ID{Col: 2}, 2) // evicts (0,0)
	if _, _, b := c.Stats(); b > 2*fragBytes {
		t.Errorf("cache holds %d bytes, bound %d", b, 2*fragBytes)
	}
	before := cl.n.Load()
	c.Load(context.Background(), tiles.ID{}, 2)
	if cl.n.Load() != before+1 {
		t.Errorf("evicted fragment was not reloaded")
	}
	// Failures are not cached.
	os.Remove(s.Path(tiles.ID{Row: 1}, 0))
	for range 2 {
		if _, err := c.Load(context.Background(), tiles.ID{Row: 1}, 2); !errors.Is(err, tiles.ErrMissing) {
			t.Errorf("missing: %v", err)
		}
	}
	if cl.n.Load() != before+3 {
		t.Errorf("failed load was cached")
	}
}

func TestCacheDrop(t *testing.T) {
	s := genSet(t, 1, 1)
	cl := &countingLoader{inner: NewLocal(s, 0)}
	c := NewCache(cl, 1<<20)
	for range 2 {
		if _, err := c.Load(context.Background(), tiles.ID{}, 2); err != nil {
			t.Fatal(err)
		}
	}
	c.Drop()
	if _, _, b := c.Stats(); b != 0 {
		t.Errorf("%d bytes held after Drop", b)
	}
	f, err := c.Load(context.Background(), tiles.ID{}, 2)
	if err != nil || f.Source != "local" || cl.n.Load() != 2 {
		t.Errorf("after Drop: source %q, %d loads, %v; want a new load", f.Source, cl.n.Load(), err)
	}
}
