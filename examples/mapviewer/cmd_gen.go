package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

// xplanetEarth is the NASA map the xplanet-images package installs.
const xplanetEarth = "/usr/share/xplanet/images/earth.jpg"

func genMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	o := tiles.DefaultGenOptions("")
	fs.StringVar(&o.Dir, "dir", "mapdata", "tile set directory to write")
	fs.IntVar(&o.Cols, "cols", o.Cols, "tile columns")
	fs.IntVar(&o.Rows, "rows", o.Rows, "tile rows")
	fs.IntVar(&o.TileW, "tile-w", o.TileW, "tile width in pixels")
	fs.IntVar(&o.TileH, "tile-h", o.TileH, "tile height in pixels")
	fs.IntVar(&o.Nodes, "nodes", 1, "node directories to spread the tiles over (by a hash of the tile name)")
	fs.IntVar(&o.Replicas, "replicas", 1, "copies of each tile, on consecutive nodes")
	fs.StringVar(&o.Source, "source", "auto", `JPEG/PNG map to cut ("auto": `+xplanetEarth+` if present, else procedural; "": procedural)`)
	fs.BoolVar(&o.Grid, "grid", false, "draw tile borders and labels on a source map (always on for the procedural map)")
	fs.IntVar(&o.Quality, "quality", 85, "JPEG quality")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if o.Source == "auto" {
		o.Source = ""
		if _, err := os.Stat(xplanetEarth); err == nil {
			o.Source = xplanetEarth
		}
	}
	start := time.Now()
	s, err := tiles.Generate(ctx, o)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %dx%d tiles of %dx%d (%dx%d map) from %s on %d nodes x%d replicas in %v\n",
		s.Dir, s.Cols, s.Rows, s.TileW, s.TileH, s.MapW(), s.MapH(), s.Source, s.Nodes, s.Replicas, time.Since(start).Round(time.Millisecond))
	return nil
}
