package loader

import (
	"container/list"
	"context"
	"sync"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

type cacheKey struct {
	id    tiles.ID
	scale int
}

type cacheEntry struct {
	key  cacheKey
	frag Fragment
	elem *list.Element
	done chan struct{} // closed when frag/err are set
	err  error
}

// Cache keeps recently used fragments of an inner loader, up to a bound
// in bytes, and merges concurrent loads of the same fragment. Failed loads
// are not kept. Fragments handed out must not be modified.
type Cache struct {
	inner Loader
	max   int64

	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	lru     *list.List // of *cacheEntry, most recent first; complete entries only
	bytes   int64
	hits    int64
	misses  int64
}

// NewCache caches up to maxBytes of fragment pixels from inner.
func NewCache(inner Loader, maxBytes int64) *Cache {
	return &Cache{inner: inner, max: maxBytes, entries: map[cacheKey]*cacheEntry{}, lru: list.New()}
}

// Load returns the cached fragment, or loads it once for all callers.
func (c *Cache) Load(ctx context.Context, id tiles.ID, scale int) (Fragment, error) {
	k := cacheKey{id, scale}
	c.mu.Lock()
	if e, ok := c.entries[k]; ok {
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
			c.hits++
			c.mu.Unlock()
			return cached(e.frag), nil
		}
		c.mu.Unlock()
		select {
		case <-e.done:
			if e.err != nil {
				return Fragment{}, e.err
			}
			return cached(e.frag), nil
		case <-ctx.Done():
			return Fragment{}, ctx.Err()
		}
	}
	e := &cacheEntry{key: k, done: make(chan struct{})}
	c.entries[k] = e
	c.misses++
	c.mu.Unlock()

	f, err := c.inner.Load(ctx, id, scale)
	c.mu.Lock()
	e.frag, e.err = f, err
	if err != nil {
		delete(c.entries, k)
	} else {
		e.elem = c.lru.PushFront(e)
		c.bytes += int64(len(f.Img.Pix))
		for c.bytes > c.max && c.lru.Len() > 1 {
			old := c.lru.Remove(c.lru.Back()).(*cacheEntry)
			delete(c.entries, old.key)
			c.bytes -= int64(len(old.frag.Img.Pix))
		}
	}
	c.mu.Unlock()
	close(e.done)
	return f, err
}

func cached(f Fragment) Fragment {
	f.Source = "cache (" + f.Source + ")"
	return f
}

// Stats reports cache hits, misses and bytes held.
func (c *Cache) Stats() (hits, misses, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.bytes
}

// Drop empties the cache (loads under way complete for their callers).
func (c *Cache) Drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.lru.Len() > 0 {
		e := c.lru.Remove(c.lru.Back()).(*cacheEntry)
		delete(c.entries, e.key)
	}
	c.bytes = 0
}
