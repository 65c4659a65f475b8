package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
)

// Processes never outlive pcorrun, however it ends (kill -9 included).
//
// A local process gets PR_SET_PDEATHSIG (SIGKILL). The kernel sends it when
// the thread that forked the child ends, not when the process does, and the
// Go runtime ends threads at will (a goroutine that returns while locked to
// its thread takes the thread with it). So every process is started from
// one goroutine locked to its OS thread for good: that thread lives exactly
// as long as pcorrun.
//
// A process started through --via may not be a child at all (ssh starts it
// on another host). Its command is wrapped in a watchdog shell that holds
// the read end of a pipe whose write end only pcorrun holds: when pcorrun
// ends, the pipe reads end-of-file on the far side (a closed ssh connection
// gives the same), and the watchdog sends SIGTERM to the process group,
// then SIGKILL a second later. The watchdog arms only when its standard
// input is a pipe or a socket, so 'ssh -n' and the like are left alone.

// watchdogScript runs "$@" (the process's command) under the watchdog. It
// signals process group 0, its own, so that no process id that may have
// been reused is ever signalled. The shell traps INT, TERM and HUP only to
// outlive them and report the process's own status: signals pcorrun
// forwards reach the process itself through its process group.
const watchdogScript = `if [ -p /dev/stdin ] || [ -S /dev/stdin ]; then
	exec 3<&0 </dev/null
	{ trap '' TERM; while read -r _ <&3; do :; done; kill -TERM 0; sleep 1; kill -KILL 0; } >/dev/null 2>&1 &
	w=$!
	exec 3<&-
	trap : INT TERM HUP
	"$@"
	s=$?
	kill -KILL $w
	if [ $s -gt 128 ]; then trap - INT TERM HUP; kill -$((s - 128)) $$; fi
	exit $s
fi
exec "$@"`

// watchdogName is the wrapper shell's $0, which names it in ps.
const watchdogName = "pcorrun-watchdog"

// watched wraps a command line in the watchdog shell.
func watched(argv []string) []string {
	return append([]string{"sh", "-c", watchdogScript, watchdogName}, argv...)
}

// joinsWords reports whether a --via command joins its arguments into one
// remote shell command line (ssh does), so that pcorrun must pass the
// command as one shell-quoted word.
func joinsWords(via []string) bool {
	return len(via) > 0 && filepath.Base(via[0]) == "ssh"
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawns    chan spawnRequest
)

// startProcess starts cmd from the spawning thread, with the parent-death
// signal set, in a process group of its own (so that signals reach all of
// it).
func startProcess(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawns = make(chan spawnRequest)
		go spawner()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	r := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawns <- r
	return <-r.done
}

// spawner runs on one OS thread for the life of the process: it never
// unlocks the thread and never returns.
func spawner() {
	runtime.LockOSThread()
	for r := range spawns {
		r.done <- r.cmd.Start()
	}
}

// watchPipe gives a --via process the read end of a pipe as its standard
// input. pcorrun closes the read end once the process has started and
// keeps the write end open until the process has ended.
func watchPipe(cmd *exec.Cmd) (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stdin = r
	return r, w, nil
}
