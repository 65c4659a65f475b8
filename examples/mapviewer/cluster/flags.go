package cluster

import (
	"flag"
	"io"
)

func newFlagSet(stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
