// Package loader defines how the map viewer obtains scaled tile fragments
// (the paper's imgLoader) and provides the threaded local loader
// (imgTLoader) and a cache of fragments. The cluster loader (imgCLoader)
// lives in package cluster and satisfies the same interface, so the
// viewer does not change between the two.
package loader

import (
	"context"
	"image"
	"runtime"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

// Fragment is one tile reduced 1:scale.
type Fragment struct {
	Img *image.RGBA
	// Source says who produced it: "local", "daemon 2", "cache (daemon 2)".
	Source string
}

// Loader produces the fragment of a tile at a scale. Load is called from
// many goroutines at once, one per tile of a view.
type Loader interface {
	Load(ctx context.Context, id tiles.ID, scale int) (Fragment, error)
}

// Local decodes and scales tiles from the local disk: the caller's
// goroutine (one per tile) does the work, at most Parallel at a time.
type Local struct {
	set tiles.Set
	sem chan struct{}
}

// NewLocal is a local loader for set running at most parallel decodes at
// once (<= 0: GOMAXPROCS).
func NewLocal(set tiles.Set, parallel int) *Local {
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	return &Local{set: set, sem: make(chan struct{}, parallel)}
}

// Load reads id from the first node directory holding a readable copy.
func (l *Local) Load(ctx context.Context, id tiles.ID, scale int) (Fragment, error) {
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return Fragment{}, ctx.Err()
	}
	defer func() { <-l.sem }()
	if err := ctx.Err(); err != nil {
		// Canceled while waiting for a turn (select picks at random
		// when both are ready).
		return Fragment{}, err
	}
	var first error
	for _, k := range l.set.Holders(id) {
		img, err := l.set.LoadScaled(id, k, scale)
		if err == nil {
			return Fragment{Img: img, Source: "local"}, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		first = &tiles.TileError{Tile: id, Err: tiles.ErrMissing}
	}
	return Fragment{}, first
}
