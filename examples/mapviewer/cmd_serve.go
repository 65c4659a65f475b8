package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/cluster"
	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/tiles"
	"github.com/pcor-go/pcor/examples/mapviewer/web"
)

func serveMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dir := fs.String("dir", "mapdata", "tile set directory")
	addr := fs.String("addr", "127.0.0.1:8080", "HTTP address (loopback)")
	winS := fs.String("window", "600x600", "window size")
	daemons := fs.Int("daemons", 0, "load through this many daemon processes over pcor (0: local threads)")
	cacheMB := fs.Int64("cache-mb", 256, "fragment cache size in MiB")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	set, err := tiles.Open(*dir)
	if err != nil {
		return err
	}
	win, err := parseWindow(*winS)
	if err != nil {
		return err
	}
	var l loader.Loader = loader.NewLocal(set, 0)
	kind := "local threads"
	if *daemons > 0 {
		c, err := cluster.Start(ctx, set, selfCommand, cluster.Options{Daemons: *daemons})
		if err != nil {
			return err
		}
		defer c.Close()
		l, kind = c.Loader, fmt.Sprintf("%d daemons over pcor", len(c.Daemons))
	}
	srv := &web.Server{Set: set, Loader: loader.NewCache(l, *cacheMB<<20), Window: win, Kind: kind}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("map viewer on http://%s/ (%s)\n", ln.Addr(), kind)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
