package main

import (
	"context"
	"flag"
	"os"

	"github.com/pcor-go/pcor/examples/mapviewer/cluster"
)

// daemonMain runs only a daemon: a process of an application whose
// viewer and other daemons were started otherwise (pcorrun
// --directory-only prints the variables to start it with).
func daemonMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	dir := fs.String("dir", "mapdata", "tile set directory")
	workers := fs.Int("workers", 0, "decodes at once (default GOMAXPROCS)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return cluster.DaemonMain(ctx, *dir, *workers, os.Stderr)
}
