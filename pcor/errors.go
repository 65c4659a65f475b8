package pcor

import "github.com/pcor-go/pcor/dispatch"

// Errors, testable with errors.Is.
var (
	// ErrClosed: the node was closed; pending requests fail with it.
	ErrClosed = dispatch.ErrClosed
	// ErrTooLarge: the message exceeds Config.MaxMessage.
	ErrTooLarge = dispatch.ErrTooLarge
	// ErrUnreachable: the destination stopped answering, or no route leads
	// to it. The error's text names the process; errors.As with
	// *UnreachableError gives its id.
	ErrUnreachable = dispatch.ErrUnreachable
	// ErrPeerDown: the directory announced that the process left or died.
	ErrPeerDown = dispatch.ErrPeerDown
	// ErrCanceled: the request was cancelled with Request.Cancel.
	ErrCanceled = dispatch.ErrCanceled
	// ErrTruncated: the message was longer than the buffer given to Irecv.
	ErrTruncated = dispatch.ErrTruncated
)

// UnreachableError carries the process that could not be reached.
type UnreachableError = dispatch.UnreachableError
