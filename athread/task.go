package athread

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/pcor-go/pcor/pcor"
)

// Task states. A task is claimed by moving it from ready to running with a
// compare-and-swap, so an entry left in a deque after its task was run by
// a joiner (or handed to another process) is skipped.
const (
	stateReady uint32 = iota
	stateRunning
	stateRemote // handed to another process; its result is awaited
	stateDone
)

// runner is the typed part of a thread: its body, and packing its input
// and output for other processes.
type runner interface {
	run(ctx context.Context) error
	label() string
	packIn(buf []byte) ([]byte, error)
	packOut(buf []byte) ([]byte, error)
	unpackOut(data []byte) error
}

// task is one Anahy thread as the scheduler sees it.
type task struct {
	state atomic.Uint32
	depth int32
	class Class
	attr  Attr
	self  runner
	fn    *funcInfo // nil: local only
	rt    *Runtime
	ctx   context.Context // creator's context
	err   error
	id    uint64 // DAG vertex (0 when the DAG is not recorded)
	endpt *pcor.Thread
	addr  pcor.Addr // endpoint address of a thread placed OnProc
	tc    threadCtx // the body's context
	// cleanup, if set, runs when the task completes.
	cleanup func()
	// from is set for a task that came from another process: its result
	// goes back there.
	from *origin
	// DAG bookkeeping: the task's vertex index within its thread.
	seg int32

	waiting atomic.Bool
	mu      sync.Mutex
	waiters []chan struct{}

	// remote bookkeeping (owner side)
	key     uint64 // nonzero while the task is known to other processes
	at      pcor.ProcID
	inBytes []byte // packed input kept for a re-run
	offered uint64 // order of the offer (pool)
	started chan struct{}
	asked   atomic.Bool // the endpoint of a thread placed elsewhere was asked for (where)
}

// finish records the task's outcome and wakes its joiners.
func (t *task) finish(err error) {
	t.err = err
	t.state.Store(stateDone)
	if t.waiting.Load() {
		t.mu.Lock()
		for _, c := range t.waiters {
			select {
			case c <- struct{}{}:
			default:
			}
		}
		t.waiters = nil
		t.mu.Unlock()
	}
}

// addWaiter registers c to be signalled when the task is done; it reports
// false when the task is already done.
func (t *task) addWaiter(c chan struct{}) bool {
	t.mu.Lock()
	t.waiting.Store(true)
	if t.state.Load() == stateDone {
		t.mu.Unlock()
		return false
	}
	t.waiters = append(t.waiters, c)
	t.mu.Unlock()
	return true
}
