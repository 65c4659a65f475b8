package pcor

import (
	"errors"
	"fmt"

	"github.com/pcor-go/pcor/internal/engine"
)

// Errors, testable with errors.Is.
var (
	// ErrClosed: the node was closed; pending requests fail with it.
	ErrClosed = errors.New("pcor: node closed")
	// ErrTooLarge: the message exceeds Config.MaxMessage, this process's
	// or its destination's (which refuses it). The error is a
	// *TooLargeError naming the process and its limit.
	ErrTooLarge = errors.New("pcor: message larger than the configured maximum")
	// ErrUnreachable: the destination stopped answering, or no route leads
	// to it. The error is an *UnreachableError naming the process.
	ErrUnreachable = errors.New("pcor: destination unreachable")
	// ErrNoPath: no path leads to the process any more (the gateways that
	// reached it left). It comes wrapped in an *UnreachableError.
	ErrNoPath = errors.New("pcor: no path")
	// ErrPeerDown: the process left or died (the directory said so, or
	// RemovePeer). The error is a *PeerDownError naming the process.
	ErrPeerDown = errors.New("pcor: peer process down")
	// ErrCanceled: the request was cancelled with Request.Cancel.
	ErrCanceled = errors.New("pcor: request canceled")
	// ErrTruncated: the message was longer than the buffer given to Irecv.
	ErrTruncated = errors.New("pcor: message longer than the receive buffer")
	// ErrNoJobKey: a node needs the application's job key, the same
	// non-zero value in every process: datagrams of other applications
	// (or other runs) carry other keys and are dropped.
	ErrNoJobKey = errors.New("pcor: Config.JobKey is 0: give every process of the application the same non-zero key (pcorrun passes a random one in PCOR_JOBKEY, which FromEnv reads)")
	// ErrInvalid: an argument the call cannot take, such as a send to a
	// wildcard address, a negative tag on a send, or a negative
	// Config size. The error wrapping it says which.
	ErrInvalid = errors.New("pcor: invalid argument")
)

// TooLargeError reports a message larger than a process accepts: this one
// (Proc is then this process) or its destination, which refused it. It
// matches ErrTooLarge with errors.Is.
type TooLargeError struct {
	Proc  ProcID // the process whose limit the message exceeds
	Size  int64  // the message's length
	Limit int64  // the largest message Proc accepts
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("pcor: message of %d bytes larger than process %d accepts (MaxMessage %d)", e.Size, e.Proc, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// UnreachableError reports a process that could not be reached. It matches
// ErrUnreachable with errors.Is, and its cause (Err, such as ErrNoPath)
// too.
type UnreachableError struct {
	Proc   ProcID // the process not reached
	Reason string // what was seen, for people: "no answer for 5s", "no path"
	Err    error  // the cause, when it is one of this package's errors
}

func (e *UnreachableError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("pcor: process %d unreachable", e.Proc)
	}
	return fmt.Sprintf("pcor: process %d unreachable: %s", e.Proc, e.Reason)
}

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// Unwrap returns the cause.
func (e *UnreachableError) Unwrap() error { return e.Err }

// PeerDownError reports a process that left or died. It matches
// ErrPeerDown with errors.Is.
type PeerDownError struct {
	Proc   ProcID // the process that left or died
	Reason string // as the directory gave it: "left", "heartbeat lost", ...
}

func (e *PeerDownError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("pcor: process %d down", e.Proc)
	}
	return fmt.Sprintf("pcor: process %d down: %s", e.Proc, e.Reason)
}

// Is makes errors.Is(err, ErrPeerDown) true.
func (e *PeerDownError) Is(target error) bool { return target == ErrPeerDown }

// apiError turns the engine's errors into this package's.
func apiError(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *engine.UnreachableError:
		return &UnreachableError{Proc: ProcID(e.Proc), Reason: e.Reason}
	case *engine.PeerDownError:
		return &PeerDownError{Proc: ProcID(e.Proc), Reason: e.Reason}
	case *engine.TooLargeError:
		return &TooLargeError{Proc: ProcID(e.Proc), Size: e.Size, Limit: e.Limit}
	}
	switch err {
	case engine.ErrClosed:
		return ErrClosed
	case engine.ErrTooLarge:
		return ErrTooLarge
	case engine.ErrUnreachable:
		return ErrUnreachable
	case engine.ErrPeerDown:
		return ErrPeerDown
	case engine.ErrCanceled:
		return ErrCanceled
	case engine.ErrTruncated:
		return ErrTruncated
	}
	return err
}
