package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/pcor-go/pcor/examples/mapviewer/loader"
	"github.com/pcor-go/pcor/examples/mapviewer/web"
)

func serveMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dir := fs.String("dir", "", "tile set directory (default: the demo's set in "+cacheDir()+", generated if absent)")
	addr := fs.String("addr", "127.0.0.1:8080", "HTTP address (loopback unless --public)")
	public := fs.Bool("public", false, "allow an --addr that is not loopback (the viewer has no authentication)")
	winS := fs.String("window", "600x600", "window size")
	daemons := fs.Int("daemons", 0, "load through this many daemon processes started by pcorrun (0: local threads; ignored under pcorrun)")
	cacheMB := fs.Int64("cache-mb", 256, "fragment cache size in MiB")
	allowDrop := fs.Bool("allow-cache-drop", false, "serve POST /cache/drop, which empties the fragment cache (for latency benchmarks)")
	smoke := fs.Bool("smoke", false, "render the 300-tile view and a cached pan through HTTP, print the times and exit")
	reps := fs.Int("reps", 3, "repetitions per measurement (--smoke; the median is shown)")
	pcorrun := fs.String("pcorrun", "", "pcorrun binary (default: built with go build, else from $PATH)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkAddr(*addr, *public); err != nil {
		return err
	}
	m, set, win, done, err := startViewer(ctx, "serve", args, *dir, kindDemo, *winS, *daemons, *pcorrun, !*smoke)
	if done {
		return err
	}
	defer m.close()
	l, kind, err := m.loader(ctx, set)
	if err != nil {
		return err
	}
	srv := &web.Server{Set: set, Loader: loader.NewCache(l, *cacheMB<<20), Window: win, Kind: kind, Daemons: m.daemons(), AllowDrop: *allowDrop}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	defer func() {
		sctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		hs.Shutdown(sctx)
	}()
	url := fmt.Sprintf("http://%s/", ln.Addr())
	if *smoke {
		return smokeRun(ctx, url, set, win, l, max(1, *reps), kind)
	}
	fmt.Printf("map viewer on %s (%s); open it in a browser, Ctrl-C stops\n", url, kind)
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
	case <-m.lost():
		return errors.New("lost the application's directory (pcorrun gone)")
	}
	return nil
}

// checkAddr refuses an HTTP address that is not loopback unless public:
// "0.0.0.0:8080" or ":8080" would serve every interface.
func checkAddr(addr string, public bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if public || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	what := host
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		what = "every interface"
	}
	return fmt.Errorf("--addr %s would serve %s, not only this machine: add --public to mean it", addr, what)
}
