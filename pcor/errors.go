package pcor

import "github.com/pcor-go/pcor/internal/engine"

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
)

// UnreachableError carries the process that could not be reached.
type UnreachableError = engine.UnreachableError
