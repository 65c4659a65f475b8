// Command mapviewer is the case study of the pCoR paper (section 7): a
// huge map of JPEG tiles viewed through a window, with the tiles loaded
// and scaled either by local threads or by daemons on cluster nodes over
// pcor. The viewer is the same in both cases; only the loader changes.
//
//	go run ./examples/mapviewer gen   --dir /tmp/map [--nodes 4 --replicas 2] [--source earth.jpg]
//	go run ./examples/mapviewer view  --dir /tmp/map --paper 7 --out view.png [--daemons 2]
//	go run ./examples/mapviewer view  --dir /tmp/map --paper-times
//	go run ./examples/mapviewer serve --dir /tmp/map --addr 127.0.0.1:8080 [--daemons 2]
//	go run ./examples/mapviewer daemon --set /tmp/map --own 0,2 --proc 1 --job 1f --viewer 0=127.0.0.1:4000
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
)

const usage = `usage: mapviewer <command> [flags]

commands:
  gen     write a tile set (15x20 tiles of 640x480 JPEG by default)
  view    render a region (or one of the paper's seven) to a PNG; --paper-times times them all
  serve   HTTP viewer on localhost
  daemon  serve tiles of node directories to a viewer over pcor (started by view/serve --daemons)

run "mapviewer <command> -h" for its flags
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "gen":
		err = genMain(ctx, args)
	case "view":
		err = viewMain(ctx, args)
	case "serve":
		err = serveMain(ctx, args)
	case "daemon":
		err = daemonMain(ctx, args)
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "mapviewer: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "mapviewer:", err)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")
