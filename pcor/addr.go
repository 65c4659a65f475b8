package pcor

import "fmt"

// ProcID identifies a process of the application (its rank).
type ProcID uint32

// ThreadID identifies a thread endpoint within a process.
type ThreadID uint32

// Tag labels a message; receivers select by it. A message's tag is 0 or
// more: a negative one (AnyTag among them) on a send fails with
// ErrInvalid.
type Tag int32

// Wildcards for receive and probe. A send to a wildcard address, or
// with AnyTag, fails with ErrInvalid.
const (
	AnyProc   ProcID   = 1<<32 - 1
	AnyThread ThreadID = 1<<32 - 1
	AnyTag    Tag      = -1
)

// Addr names a thread anywhere in the application: a <process, thread> pair.
type Addr struct {
	Proc   ProcID   // the process (its rank)
	Thread ThreadID // the thread endpoint within it
}

// Any matches every sender in a receive.
var Any = Addr{AnyProc, AnyThread}

func (a Addr) String() string {
	p, t := "*", "*"
	if a.Proc != AnyProc {
		p = fmt.Sprint(uint32(a.Proc))
	}
	if a.Thread != AnyThread {
		t = fmt.Sprint(uint32(a.Thread))
	}
	return "<" + p + "," + t + ">"
}
