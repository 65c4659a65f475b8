package shm

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A port watches the processes it shares rings with (the producers of its
// slots, the receivers it sends to) through a pidfd each, read through the
// Go runtime's poller: a pidfd becomes readable when its process exits,
// and the port then rings its own doorbell to look at once. A sleeping
// port with every peer watched needs no timer to find the dead; a peer
// that cannot be watched (no pidfd_open, or another pid namespace) keeps
// the port looking every scanEvery.
type watcher struct {
	mu        sync.Mutex // guards pids, closed and unwatched
	pids      map[uint32]*os.File
	closed    bool
	unwatched bool // a peer could not be watched
	wg        sync.WaitGroup
}

// idleScan bounds a sleep when every peer is watched: the pidfds tell of
// deaths, and this only backs them up.
const idleScan = 5 * time.Second

// watch starts watching process pid (start time start) unless it is
// watched already. fire is called once the process has exited.
func (w *watcher) watch(pid uint32, start uint64, fire func()) {
	if pid == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.pids[pid] != nil {
		return
	}
	fd, err := unix.PidfdOpen(int(pid), unix.PIDFD_NONBLOCK)
	if err != nil {
		if err == unix.ESRCH {
			fire() // gone already
		} else {
			w.unwatched = true
		}
		return
	}
	// The pid may name a newer process than the one that claimed the
	// slot: then the one that claimed it is gone.
	if !alive(pid, start) {
		unix.Close(fd)
		fire()
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		w.unwatched = true
		return
	}
	if w.pids == nil {
		w.pids = make(map[uint32]*os.File)
	}
	w.pids[pid] = f
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		exited := false
		err := rc.Read(func(fd uintptr) bool {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, _ := unix.Poll(pfd, 0)
			exited = n > 0
			return exited
		})
		w.mu.Lock()
		if w.pids[pid] == f {
			delete(w.pids, pid)
		}
		w.mu.Unlock()
		f.Close()
		if err == nil && exited {
			fire()
		}
	}()
}

// allWatched reports whether every peer met so far is watched.
func (w *watcher) allWatched() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.unwatched
}

// close stops every watch and waits for their goroutines.
func (w *watcher) close() {
	w.mu.Lock()
	w.closed = true
	for pid, f := range w.pids {
		f.Close()
		delete(w.pids, pid)
	}
	w.mu.Unlock()
	w.wg.Wait()
}
