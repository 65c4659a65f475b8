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
	fs.IntVar(&o.Cols, "cols", 0, "tile columns (0: from the source, the columns its width fills at its resolution; 15 for the procedural map)")
	fs.IntVar(&o.Rows, "rows", 0, "tile rows (0: from the source, the rows that keep its shape; 20 for the procedural map)")
	fs.StringVar(&o.Fit, "fit", tiles.FitPad, "where the grid's shape differs from the source's: pad (keep all of it, border around) or crop (fill the map, cut the excess); a source is never stretched")
	fs.BoolVar(&o.Upscale, "upscale", false, "allow a map larger than the source's resolution (interpolated)")
	fs.IntVar(&o.TileW, "tile-w", o.TileW, "tile width in pixels")
	fs.IntVar(&o.TileH, "tile-h", o.TileH, "tile height in pixels")
	fs.IntVar(&o.Nodes, "nodes", demoNodes, "node directories to spread the tiles over (by a hash of the tile name); at least the daemons to serve them")
	fs.IntVar(&o.Replicas, "replicas", demoReplicas, "copies of each tile, on consecutive nodes")
	fs.StringVar(&o.Source, "source", "auto", `JPEG/PNG map to cut ("auto": `+xplanetEarth+` if present, else procedural; "": procedural)`)
	fs.BoolVar(&o.Grid, "grid", false, "draw tile borders and labels on a source map (always on for the procedural map)")
	fs.IntVar(&o.Quality, "quality", 85, "JPEG quality")
	if err := parseFlags(fs, args); err != nil {
		return err
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
	fmt.Printf("%s: %dx%d map: %dx%d tiles of %dx%d from %s on %d nodes x%d replicas in %v\n",
		s.Dir, s.MapW(), s.MapH(), s.Cols, s.Rows, s.TileW, s.TileH, s.Source, s.Nodes, s.Replicas, time.Since(start).Round(time.Millisecond))
	if s.Layout != "" {
		fmt.Printf("%s: %s\n", s.Dir, s.Layout)
	}
	return nil
}
