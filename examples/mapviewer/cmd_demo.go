package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
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
	addr := fs.String("addr", "", "HTTP address (default "+demoAddr+", or a free port when that is taken; loopback unless --public)")
	public := fs.Bool("public", false, "allow an --addr that is not loopback (the viewer has no authentication)")
	daemons := fs.Int("daemons", 4, "daemon processes")
	winS := fs.String("window", "600x600", "window size")
	smoke := fs.Bool("smoke", false, "render the 300-tile view and a cached pan through the cluster, print the times and exit")
	reps := fs.Int("reps", 3, "repetitions per measurement (--smoke)")
	pcorrun := fs.String("pcorrun", "", "pcorrun binary (default: built with go build into the cache directory, else from $PATH)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *daemons < 1 {
		return fmt.Errorf("--daemons %d: at least 1", *daemons)
	}
	if *addr != "" {
		if err := checkAddr(*addr, *public); err != nil {
			return err
		}
	}
	set, err := cachedSet(ctx, "demo", *dir, kindDemo, *daemons)
	if err != nil {
		return err
	}
	if *addr == "" {
		*addr = freeAddr(*smoke)
	}
	self, bin, err := launchBinaries(ctx, *pcorrun)
	if err != nil {
		return err
	}
	prog := []string{self, "serve", "--dir", set.Dir, "--addr", *addr, "--window", *winS, "--reps", strconv.Itoa(*reps)}
	var flags []string
	if *public {
		prog = append(prog, "--public")
	}
	if *smoke {
		prog = append(prog, "--smoke")
	} else {
		// A daemon that dies leaves the viewer running on the replicas.
		flags = append(flags, "--keep-going")
	}
	fmt.Printf("demo: %s (%dx%d tiles from %s); starting %d daemons and the viewer: %s -n %d %s serve ...\n",
		set.Dir, set.Cols, set.Rows, set.Source, *daemons, filepath.Base(bin), *daemons+1, filepath.Base(self))
	return stoppedOK(ctx, "demo", runPcorrun(ctx, bin, *daemons+1, flags, prog, os.Stdout, os.Stderr))
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
