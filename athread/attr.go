package athread

import "github.com/pcor-go/pcor/pcor"

// Place says where a thread may run.
type Place uint8

const (
	// Anywhere (the default): in the creating process, or, for a
	// registered function, in any process that steals it.
	Anywhere Place = iota
	// Here: only in the creating process.
	Here
	// OnProc: in process Attr.Proc, started there at once on a goroutine
	// of its own with a pcor.Thread endpoint of its own (see Endpoint):
	// pCoR's remote thread creation. The function must be registered.
	OnProc
)

// Attr are a thread's attributes (Anahy's athread_attr_t). The zero value
// is a thread that may run anywhere, with no cost hint, not re-run.
type Attr struct {
	// Place is where the thread may run (default Anywhere).
	Place Place
	Proc  pcor.ProcID // with Place == OnProc
	// Cost is a hint of the thread's work, in any unit consistent across
	// the application: among threads of equal depth the costlier is handed
	// out first, and policies see it.
	Cost int64
	// Idempotent lets the runtime run the thread again in another process
	// when the process running it dies, instead of failing its Join.
	Idempotent bool
}
