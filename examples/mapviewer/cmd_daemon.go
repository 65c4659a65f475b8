package main

import (
	"context"
	"os"
	"os/exec"

	"github.com/pcor-go/pcor/examples/mapviewer/cluster"
)

func daemonMain(ctx context.Context, args []string) error {
	return cluster.DaemonMain(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}

// selfCommand runs this program's daemon command.
func selfCommand(args []string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe, append([]string{"daemon"}, args...)...)
	cmd.Stderr = os.Stderr
	return cmd
}
