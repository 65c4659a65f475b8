// Command mapviewer is the case study of the pCoR paper (section 7): a
// huge map of JPEG tiles viewed through a window, with the tiles loaded
// and scaled either by local threads or by daemons on cluster nodes over
// pcor. The viewer is the same in both cases; only the loader changes.
//
// With daemons, the viewer and the daemons are the processes of one pcor
// application started by pcorrun and joined through its directory: rank 0
// is the viewer, ranks 1..n the daemons, whatever the command.
//
//	go run ./examples/mapviewer demo [--smoke]
//	go run ./examples/mapviewer gen   --dir /tmp/map [--nodes 4 --replicas 2] [--source earth.jpg]
//	go run ./examples/mapviewer view  --dir /tmp/map --paper 7 --out view.png [--daemons 2]
//	go run ./examples/mapviewer view  --dir /tmp/map --paper-times
//	go run ./examples/mapviewer serve --dir /tmp/map --addr 127.0.0.1:8080 [--daemons 2]
//	pcorrun -n 5 mapviewer serve --dir /tmp/map     (what serve --daemons 4 runs)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: mapviewer <command> [flags]

commands:
  demo    generate a map if needed, start 4 daemons and the HTTP viewer through pcorrun
          (--smoke: render one view through the cluster, print the times, exit)
  gen     write a tile set (15x20 tiles of 640x480 JPEG by default)
  view    render a region (or one of the paper's seven) to a PNG; --paper-times times them all
  serve   HTTP viewer on localhost
  daemon  only a daemon of an application started otherwise (under pcorrun every
          rank but 0 of view and serve is a daemon)
  figures the README's figures in one run: the Figure 5 table and the page's
          latencies in headless Chromium (--readme FILE writes them there)

run "mapviewer <command> -h" for its flags
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "demo":
		err = demoMain(ctx, args)
	case "gen":
		err = genMain(ctx, args)
	case "view":
		err = viewMain(ctx, args)
	case "serve":
		err = serveMain(ctx, args)
	case "daemon":
		err = daemonMain(ctx, args)
	case "figures":
		err = figuresMain(ctx, args)
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "mapviewer: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "mapviewer:", err)
		os.Exit(1)
	}
}

// errUsage reports bad flags (the flag package has said which): exit 2.
var errUsage = errors.New("usage")

// parseFlags parses a command's flags: -h returns flag.ErrHelp (exit 0,
// the flags were printed), a bad flag errUsage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		if fs.NArg() > 0 {
			fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
			return errUsage
		}
		return nil
	case errors.Is(err, flag.ErrHelp):
		return flag.ErrHelp
	}
	return errUsage
}
