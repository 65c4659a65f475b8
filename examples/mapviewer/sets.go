package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

// The tile sets the commands make by themselves in cacheDir when no --dir
// is given.
const (
	// kindPaper is the paper's map: 15x20 procedural tiles of 640x480
	// (9600x9600), the set of the Figure 5 analogue.
	kindPaper = "paper"
	// kindDemo is the demo's map: Blue Marble when xplanet-images is
	// installed, else the paper's map.
	kindDemo = "demo"
)

// demoNodes and demoReplicas are the layout of the generated sets and
// gen's defaults: one node directory per daemon of the demo, two copies
// of each tile.
const (
	demoNodes    = 4
	demoReplicas = 2
)

// setOptions is how the set of kind is generated for nodes node
// directories, and its directory name in the cache.
func setOptions(kind string, nodes int) (tiles.GenOptions, string) {
	o := tiles.DefaultGenOptions("")
	o.Nodes, o.Replicas = nodes, min(demoReplicas, nodes)
	name := "paper"
	if kind == kindDemo {
		if _, err := os.Stat(xplanetEarth); err == nil {
			// The paper's width, 15 tiles, and the rows that keep the
			// Earth's 2:1 shape: the 2048x1024 image is scaled up (the
			// demo asks for it and says so).
			o.Source, name = xplanetEarth, "earth-9600x4800"
			o.Rows, o.Upscale = 0, true
		}
	}
	return o, fmt.Sprintf("tiles-%s-%dnodes", name, nodes)
}

// cachedSet opens the tile set in dir, or, when dir is empty, the set of
// kind in the cache directory, generated the first time; who names the
// command in its messages. The set must have at least nodes node
// directories.
func cachedSet(ctx context.Context, who, dir, kind string, nodes int) (tiles.Set, error) {
	nodes = max(nodes, 1)
	o, name := setOptions(kind, max(nodes, demoNodes))
	if dir == "" {
		dir = filepath.Join(cacheDir(), name)
	}
	if s, err := tiles.Open(dir); err == nil {
		if s.Nodes < nodes {
			return tiles.Set{}, fmt.Errorf("%s has %d node directories, fewer than %d daemons (give another --dir)", dir, s.Nodes, nodes)
		}
		return s, nil
	} else if _, serr := os.Stat(dir); serr == nil {
		return tiles.Set{}, fmt.Errorf("%s exists but is not a tile set: %w", dir, err)
	}
	// Generate next to dir and rename, so an interrupted run leaves no
	// half-written set behind.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return tiles.Set{}, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".gen-")
	if err != nil {
		return tiles.Set{}, err
	}
	defer os.RemoveAll(tmp)
	o.Dir = tmp
	src := o.Source
	if src == "" {
		src = "procedural"
	}
	fmt.Printf("%s: generating tiles of %dx%d from %s into %s ...\n", who, o.TileW, o.TileH, src, dir)
	start := time.Now()
	g, err := tiles.Generate(ctx, o)
	if err != nil {
		return tiles.Set{}, err
	}
	fmt.Printf("%s: %dx%d map, %dx%d tiles", who, g.MapW(), g.MapH(), g.Cols, g.Rows)
	if g.Layout != "" {
		fmt.Printf(": %s", g.Layout)
	}
	fmt.Println()
	if err := os.Rename(tmp, dir); err != nil {
		// Another run may have made it meanwhile.
		if s, oerr := tiles.Open(dir); oerr == nil {
			return s, nil
		}
		return tiles.Set{}, err
	}
	s, err := tiles.Open(dir)
	if err != nil {
		return tiles.Set{}, err
	}
	fmt.Printf("%s: generated in %v\n", who, time.Since(start).Round(time.Millisecond))
	return s, nil
}
