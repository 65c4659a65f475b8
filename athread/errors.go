package athread

import (
	"errors"
	"fmt"

	"github.com/pcor-go/pcor/pcor"
)

// ErrClosed is returned by Join when the runtime was closed before the
// thread ran.
var ErrClosed = errors.New("athread: runtime closed")

// ErrRegistry is wrapped by the start-up error of a runtime whose
// registered functions differ from another process's.
var ErrRegistry = errors.New("athread: registered functions differ between processes")

// PanicError is the error Join returns for a thread whose body panicked.
type PanicError struct {
	Value any         // the value given to panic
	Stack []byte      // the goroutine's stack where it panicked
	Proc  pcor.ProcID // the process the thread ran in
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("athread: thread panicked in process %d: %v\n%s", e.Proc, e.Value, e.Stack)
}

// PeerError is the error Join returns for a thread that was running in
// another process when that process went away. errors.Is(err,
// pcor.ErrPeerDown) holds.
type PeerError struct {
	Proc pcor.ProcID // the process that ran the thread
	Func string      // the thread's registered name
	Err  error       // why the process is considered gone
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("athread: thread %q was running in process %d, which is gone: %v", e.Func, e.Proc, e.Err)
}

// Unwrap returns pcor.ErrPeerDown and the cause (Err), so that errors.Is
// matches either.
func (e *PeerError) Unwrap() []error { return []error{pcor.ErrPeerDown, e.Err} }

// RemoteError carries the error a thread body returned in another process:
// only its text crosses processes.
type RemoteError struct {
	Proc pcor.ProcID // the process the thread ran in
	Msg  string      // the text of the error its body returned
}

func (e *RemoteError) Error() string { return fmt.Sprintf("process %d: %s", e.Proc, e.Msg) }
