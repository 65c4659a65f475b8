package pcor

import (
	"errors"

	"github.com/pcor-go/pcor/internal/engine"
)

// Errors, testable with errors.Is.
var (
	// ErrClosed: the node was closed; pending requests fail with it.
	ErrClosed = engine.ErrClosed
	// ErrTooLarge: the message exceeds Config.MaxMessage.
	ErrTooLarge = engine.ErrTooLarge
	// ErrUnreachable: the destination stopped answering, or no route leads
	// to it. The error's text names the process; errors.As with
	// *UnreachableError gives its id.
	ErrUnreachable = engine.ErrUnreachable
	// ErrPeerDown: the directory announced that the process left or died.
	ErrPeerDown = engine.ErrPeerDown
	// ErrCanceled: the request was cancelled with Request.Cancel.
	ErrCanceled = engine.ErrCanceled
	// ErrTruncated: the message was longer than the buffer given to Irecv.
	ErrTruncated = engine.ErrTruncated
	// ErrNoJobKey: a node needs the application's job key, the same
	// non-zero value in every process: datagrams of other applications
	// (or other runs) carry other keys and are dropped.
	ErrNoJobKey = errors.New("pcor: Config.JobKey is 0: give every process of the application the same non-zero key (pcorrun passes a random one in PCOR_JOBKEY, which FromEnv reads)")
)

// UnreachableError carries the process that could not be reached.
type UnreachableError = engine.UnreachableError
