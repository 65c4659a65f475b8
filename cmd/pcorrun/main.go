// Command pcorrun starts a pcor application: a directory and n processes,
// here or on other hosts through a command template.
//
//	pcorrun -n 4 ./prog args...
//	pcorrun -n 6 --hosts a,b,c --via 'ssh {host}' --listen 10.0.0.1:0 ./prog
//	pcorrun --directory-only -n 4 --listen 10.0.0.1:7000
//	pcorrun -n 3 --routes ./prog     (and kill -USR1 <pcorrun> for the tables again)
//
// Each process gets PCOR_COORD, PCOR_RANK, PCOR_SIZE and PCOR_JOBKEY (a
// random key per run); its output lines are prefixed with its rank. SIGINT
// and SIGTERM are forwarded (a second one kills the processes, as does the
// end of --grace). When a process fails the others are stopped
// and pcorrun exits with the failed process's status, naming its rank.
// No process outlives pcorrun, even one killed with SIGKILL: local processes
// get a parent-death signal, and --via processes run under a watchdog that
// ends them when pcorrun's pipe to them (for ssh, the connection) closes.
// ssh joins its arguments into one command line, so with --via 'ssh {host}'
// pcorrun passes the command as one quoted word.
//
// With --routes, pcorrun prints the routing table of every process, as
// each computes it from the membership (routing.Build): which port, next
// hop and path reach every other process for each range of message sizes,
// and which processes no path reaches.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is pcorrun with its arguments and output streams; it returns the exit
// status.
func run(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if err != nil {
		if err == errHelp {
			return 0
		}
		fmt.Fprintf(stderr, "pcorrun: %v\n", err)
		return 2
	}
	if opts.directoryOnly {
		return serveDirectory(opts, stdout, stderr)
	}
	return launch(opts, stdout, stderr)
}
