package directory

import "errors"

// Errors, testable with errors.Is.
var (
	// ErrBadJobKey: the join carried another application's job key. The
	// server refuses it and changes nothing.
	ErrBadJobKey = errors.New("directory: wrong job key")
	// ErrProcTaken: the requested process id belongs to a live member.
	ErrProcTaken = errors.New("directory: process id already taken")
	// ErrFrameTooLarge: a frame's length prefix exceeds the limit; nothing
	// was allocated for it.
	ErrFrameTooLarge = errors.New("directory: frame too large")
	// ErrProtocol: the peer sent something that is not a valid message.
	ErrProtocol = errors.New("directory: protocol error")
	// ErrClosed: the client or server was closed.
	ErrClosed = errors.New("directory: closed")
	// ErrLost: the session to the directory was lost (closed by the
	// server, or heartbeats stopped).
	ErrLost = errors.New("directory: session lost")
	// ErrRefused: the server refused the join for a reason other than the
	// job key or the process id (the error text says which).
	ErrRefused = errors.New("directory: join refused")
	// ErrNoCoord: no directory address is known (PCOR_COORD unset).
	ErrNoCoord = errors.New("directory: PCOR_COORD not set")
	// ErrNoJobKey: no job key is known (PCOR_JOBKEY unset).
	ErrNoJobKey = errors.New("directory: PCOR_JOBKEY not set")
	// ErrEnv: an environment variable has a malformed value.
	ErrEnv = errors.New("directory: bad environment variable")
)
