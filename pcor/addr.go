package pcor

import (
	"fmt"

	"github.com/pcor-go/pcor/internal/engine"
)

// ProcID identifies a process of the application (its rank).
type ProcID = engine.ProcID

// ThreadID identifies a thread endpoint within a process.
type ThreadID = engine.ThreadID

// Tag labels a message; receivers select by it.
type Tag = engine.Tag

// Wildcards for receive and probe.
const (
	AnyProc   ProcID   = engine.AnyProc
	AnyThread ThreadID = engine.AnyThread
	AnyTag    Tag      = engine.AnyTag
)

// Addr names a thread anywhere in the application: a <process, thread> pair.
type Addr struct {
	Proc   ProcID
	Thread ThreadID
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
