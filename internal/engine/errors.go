package engine

import (
	"errors"
	"fmt"
)

// Errors reported by requests.
var (
	ErrClosed      = errors.New("pcor: node closed")
	ErrTooLarge    = errors.New("pcor: message larger than the configured maximum")
	ErrUnreachable = errors.New("pcor: destination unreachable")
	ErrPeerDown    = errors.New("pcor: peer process down")
	ErrCanceled    = errors.New("pcor: request canceled")
	ErrTruncated   = errors.New("pcor: message longer than the receive buffer")
)

// UnreachableError reports the process that could not be reached. It
// matches ErrUnreachable with errors.Is.
type UnreachableError struct {
	Proc   ProcID
	Reason string
}

func (e *UnreachableError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("pcor: process %d unreachable", e.Proc)
	}
	return fmt.Sprintf("pcor: process %d unreachable: %s", e.Proc, e.Reason)
}

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// TooLargeError reports a message larger than a process accepts: this
// one (Proc is then this process) or its destination, which refused it. It
// matches ErrTooLarge.
type TooLargeError struct {
	Proc  ProcID
	Size  int64 // the message's length
	Limit int64 // the largest message Proc accepts
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("pcor: message of %d bytes larger than process %d accepts (MaxMessage %d)", e.Size, e.Proc, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// PeerDownError reports a process announced gone. It matches ErrPeerDown.
type PeerDownError struct {
	Proc   ProcID
	Reason string
}

func (e *PeerDownError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("pcor: process %d down", e.Proc)
	}
	return fmt.Sprintf("pcor: process %d down: %s", e.Proc, e.Reason)
}

// Is makes errors.Is(err, ErrPeerDown) true.
func (e *PeerDownError) Is(target error) bool { return target == ErrPeerDown }
