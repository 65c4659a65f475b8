package athread

import (
	"encoding/binary"
	"errors"

	"github.com/pcor-go/pcor/pcor"
)

// Message tags of the runtime's service thread.
const (
	tagHello   pcor.Tag = 1  // registry description
	tagSteal   pcor.Tag = 2  // stealReq
	tagTask    pcor.Tag = 3  // taskMsg
	tagNoWork  pcor.Tag = 4  // noWork
	tagResult  pcor.Tag = 5  // resultMsg
	tagStarted pcor.Tag = 6  // key, thread id
	tagDone    pcor.Tag = 7  // the run is over
	tagTrace   pcor.Tag = 8  // a process's trace, JSON
	tagWatch   pcor.Tag = 9  // never sent: a receive that fails when the peer goes
	tagReady   pcor.Tag = 10 // start-up: registrations compared
	tagStop    pcor.Tag = 11 // to itself: the receiver ends
	tagWhere   pcor.Tag = 12 // key: the owner of a thread placed there asks for its endpoint (answered by tagStarted)
)

var errShort = errors.New("athread: short message")

// noWork answers a request for work the victim had no thread for.
type noWork struct {
	seq uint32
	// held is set when the victim remembers the thief as hungry: it hands
	// it the next thread it offers without being asked again.
	held bool
}

const noWorkLen = 5

func (m noWork) append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, m.seq)
	if m.held {
		return append(b, 1)
	}
	return append(b, 0)
}

func (m *noWork) decode(b []byte) error {
	if len(b) != noWorkLen || b[4] > 1 {
		return errShort
	}
	m.seq, m.held = binary.LittleEndian.Uint32(b), b[4] == 1
	return nil
}

// stealReq asks for a thread on behalf of thief.
type stealReq struct {
	thief pcor.ProcID
	seq   uint32
	hops  uint16
	// async is set for a request the thief did not wait for
	// (AsyncPolicy): it is answered once, never fed later.
	async bool
}

// hopsAsync marks an asynchronous request in the hops field.
const hopsAsync = 1 << 15

func (m stealReq) append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(m.thief))
	b = binary.LittleEndian.AppendUint32(b, m.seq)
	h := m.hops &^ hopsAsync
	if m.async {
		h |= hopsAsync
	}
	return binary.LittleEndian.AppendUint16(b, h)
}

func (m *stealReq) decode(b []byte) error {
	if len(b) != 10 {
		return errShort
	}
	m.thief = pcor.ProcID(binary.LittleEndian.Uint32(b))
	m.seq = binary.LittleEndian.Uint32(b[4:])
	h := binary.LittleEndian.Uint16(b[8:])
	m.hops, m.async = h&^hopsAsync, h&hopsAsync != 0
	return nil
}

// Task message flags.
const (
	flagIdempotent = 1 << iota
	flagSpawn      // Place OnProc: run on a goroutine of its own
)

// taskMsg hands a thread to another process.
type taskMsg struct {
	owner pcor.ProcID
	key   uint64
	seq   uint32 // the steal request answered (0 for a spawn)
	fn    uint32
	depth int32
	cost  int64
	flags uint8
	in    []byte
}

const taskHeader = 4 + 8 + 4 + 4 + 4 + 8 + 1

func (m taskMsg) append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(m.owner))
	b = binary.LittleEndian.AppendUint64(b, m.key)
	b = binary.LittleEndian.AppendUint32(b, m.seq)
	b = binary.LittleEndian.AppendUint32(b, m.fn)
	b = binary.LittleEndian.AppendUint32(b, uint32(m.depth))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.cost))
	b = append(b, m.flags)
	return append(b, m.in...)
}

func (m *taskMsg) decode(b []byte) error {
	if len(b) < taskHeader {
		return errShort
	}
	m.owner = pcor.ProcID(binary.LittleEndian.Uint32(b))
	m.key = binary.LittleEndian.Uint64(b[4:])
	m.seq = binary.LittleEndian.Uint32(b[12:])
	m.fn = binary.LittleEndian.Uint32(b[16:])
	m.depth = int32(binary.LittleEndian.Uint32(b[20:]))
	m.cost = int64(binary.LittleEndian.Uint64(b[24:]))
	m.flags = b[32]
	m.in = b[taskHeader:]
	return nil
}

// Result statuses.
const (
	resultOK = iota
	resultErr
	resultPanic
)

// resultMsg carries a thread's outcome back to its owner.
type resultMsg struct {
	key    uint64
	status uint8
	// placed is set for a thread placed on the process (Place OnProc):
	// thread is its endpoint's id, which its owner may not know yet.
	placed  bool
	thread  pcor.ThreadID
	payload []byte // packed output, or the error's text
}

// resultPlaced marks, in the status byte, a result followed by the
// thread's endpoint id.
const resultPlaced = 0x80

func (m resultMsg) append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, m.key)
	if !m.placed {
		b = append(b, m.status&^resultPlaced)
		return append(b, m.payload...)
	}
	b = append(b, m.status|resultPlaced)
	b = binary.LittleEndian.AppendUint32(b, uint32(m.thread))
	return append(b, m.payload...)
}

func (m *resultMsg) decode(b []byte) error {
	if len(b) < 9 {
		return errShort
	}
	m.key = binary.LittleEndian.Uint64(b)
	m.status = b[8] &^ resultPlaced
	m.placed = b[8]&resultPlaced != 0
	m.thread = 0
	b = b[9:]
	if m.placed {
		if len(b) < 4 {
			return errShort
		}
		m.thread = pcor.ThreadID(binary.LittleEndian.Uint32(b))
		b = b[4:]
	}
	m.payload = b
	return nil
}
