package engine

// ProcID identifies a process of the application.
type ProcID uint32

// ThreadID identifies a thread endpoint within a process.
type ThreadID uint32

// Tag labels a message.
type Tag int32

// Wildcards accepted by receives and probes.
const (
	AnyProc   ProcID   = 1<<32 - 1
	AnyThread ThreadID = 1<<32 - 1
	AnyTag    Tag      = -1
)
