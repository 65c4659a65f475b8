// Package testdir makes the directories tests keep shared-memory segments
// in (on tmpfs, so that they are memory), and removes those that test
// processes killed before their cleanup ran left behind: a segment's
// directory of its own spares other runs a test's segments, but the
// fabric's reaper (shm.Listen) only looks into the directory it is given,
// never into another run's.
package testdir

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// legacyAge is how long a directory made before its name carried its
// process (prefix and random digits only) stays: long enough that no
// run still uses it.
const legacyAge = time.Hour

// Make makes a directory named prefix, this process's id, "-" and random
// digits in base ("" or a base that does not exist: os.TempDir()), after
// removing those of processes that are gone (Sweep).
func Make(base, prefix string) (string, error) {
	if base != "" {
		if _, err := os.Stat(base); err != nil {
			base = ""
		}
	}
	if base == "" {
		base = os.TempDir()
	}
	Sweep(base, prefix)
	return os.MkdirTemp(base, prefix+strconv.Itoa(os.Getpid())+"-")
}

// Sweep removes, with what they hold, the directories in base named
// prefix, a process id, "-" and more whose process is gone, and those
// named prefix and digits alone (made before the process was in the name)
// unchanged for an hour.
func Sweep(base, prefix string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() || rest == "" {
			continue
		}
		path := filepath.Join(base, e.Name())
		if id, _, withPid := strings.Cut(rest, "-"); withPid {
			pid, err := strconv.Atoi(id)
			if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
				continue
			}
			os.RemoveAll(path)
			continue
		}
		if _, err := strconv.ParseUint(rest, 10, 64); err != nil {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > legacyAge {
			os.RemoveAll(path)
		}
	}
}
