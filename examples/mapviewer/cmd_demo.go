package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
)

// cacheDir holds the demo's tile sets and the pcorrun binary:
// $XDG_CACHE_HOME/pcor-mapviewer, else /tmp/pcor-mapviewer.
func cacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "pcor-mapviewer")
	}
	return filepath.Join(os.TempDir(), "pcor-mapviewer")
}

// demoAddr is the demo's HTTP address when free.
const demoAddr = "127.0.0.1:8080"

func demoMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	dir := fs.String("dir", "", "tile set directory, generated if absent (default: in "+cacheDir()+")")
	addr := fs.String("addr", "", "HTTP address (default "+demoAddr+", or a free port when that is taken)")
	daemons := fs.Int("daemons", 4, "daemon processes")
	winS := fs.String("window", "600x600", "window size")
	smoke := fs.Bool("smoke", false, "render the 300-tile view and a cached pan through the cluster, print the times and exit")
	reps := fs.Int("reps", 3, "repetitions per measurement (--smoke)")
	pcorrun := fs.String("pcorrun", "", "pcorrun binary (default: built with go build into the cache directory, else from $PATH)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *daemons < 1 {
		return fmt.Errorf("--daemons %d: at least 1", *daemons)
	}
	set, err := demoSet(ctx, *dir, *daemons)
	if err != nil {
		return err
	}
	if *addr == "" {
		*addr = freeAddr(*smoke)
	}
	self, err := selfPath()
	if err != nil {
		return err
	}
	bin, err := findPcorrun(ctx, *pcorrun, filepath.Join(cacheDir(), "bin"))
	if err != nil {
		return err
	}
	prog := []string{self, "serve", "--dir", set.Dir, "--addr", *addr, "--window", *winS, "--reps", strconv.Itoa(*reps)}
	var flags []string
	if *smoke {
		prog = append(prog, "--smoke")
	} else {
		// A daemon that dies leaves the viewer running on the replicas.
		flags = append(flags, "--keep-going")
	}
	fmt.Printf("demo: %s (%dx%d tiles from %s); starting %d daemons and the viewer: %s -n %d %s serve ...\n",
		set.Dir, set.Cols, set.Rows, set.Source, *daemons, filepath.Base(bin), *daemons+1, filepath.Base(self))
	err = runPcorrun(ctx, bin, *daemons+1, flags, prog, os.Stdout, os.Stderr)
	if ctx.Err() != nil {
		// Stopped by the user. pcorrun's status still reports a process
		// that failed earlier (it said which above); the demo stopped
		// as asked.
		fmt.Println("demo: stopped")
		return nil
	}
	return err
}

// freeAddr is demoAddr when it is free, else a port the system chooses.
func freeAddr(smoke bool) string {
	if smoke {
		return "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", demoAddr)
	if err != nil {
		return "127.0.0.1:0"
	}
	ln.Close()
	return demoAddr
}

// demoSet opens the tile set in dir, or generates it there: the paper's
// 15x20 tiles of 640x480 cut from earth.jpg when installed, else
// procedural, on one node directory per daemon with two replicas.
func demoSet(ctx context.Context, dir string, daemons int) (tiles.Set, error) {
	o := tiles.DefaultGenOptions("")
	o.Nodes, o.Replicas = daemons, min(2, daemons)
	name := "procedural"
	if _, err := os.Stat(xplanetEarth); err == nil {
		o.Source, name = xplanetEarth, "earth"
	}
	if dir == "" {
		dir = filepath.Join(cacheDir(), fmt.Sprintf("tiles-%s-%dnodes", name, o.Nodes))
	}
	if s, err := tiles.Open(dir); err == nil {
		if s.Nodes < daemons {
			return tiles.Set{}, fmt.Errorf("%s has %d node directories, fewer than %d daemons (give another --dir)", dir, s.Nodes, daemons)
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
	fmt.Printf("demo: generating %dx%d tiles of %dx%d (%s) into %s ...\n", o.Cols, o.Rows, o.TileW, o.TileH, name, dir)
	start := time.Now()
	if _, err := tiles.Generate(ctx, o); err != nil {
		return tiles.Set{}, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return tiles.Set{}, err
	}
	s, err := tiles.Open(dir)
	if err != nil {
		return tiles.Set{}, err
	}
	fmt.Printf("demo: generated in %v\n", time.Since(start).Round(time.Millisecond))
	return s, nil
}
