package engine

import (
	"encoding/binary"

	"github.com/pcor-go/pcor/internal/wire"
)

// Runs: a whole small message that no receive waits for, of the same key
// as the last message stored for its destination thread, is appended to
// that message's control block rather than taking a block of its own. The
// block stays the thread's last arrival, so the order of the thread's
// unexpected messages (per key and for wildcard receives) is unchanged;
// each message in the run keeps its own budget (its length) and message
// id. A receive takes the run's messages in order, one each, under the
// stripe lock. The run's storage counts in the budget too (runBytes, from
// its first appended message until it is given back), so that runs of a
// message or two cannot hold more memory than the budget allows.

// runBytes is the most a block's run holds (records with their headers).
const runBytes = 8 << 10

// runHeader is a run record's header: length (4 bytes) and message id (8).
const runHeader = 12

// runLeft reports whether m holds messages after its current one.
func (m *mcb) runLeft() bool { return int(m.runOff) < len(m.run) }

// runReserved is the budget held by the messages after m's current one.
func (m *mcb) runReserved() int64 {
	var n int64
	for off := int(m.runOff); off+runHeader <= len(m.run); {
		l := int(binary.LittleEndian.Uint32(m.run[off:]))
		n += int64(l)
		off += runHeader + l
	}
	return n
}

// appendRunLocked appends message h (key k, bytes body) to the run of the
// last unexpected message of k's thread if that message is of key k and
// may hold a run, with budget reserved for it; false if not. s is k's
// stripe, locked.
func (d *dispatcher) appendRunLocked(s *stripe, k key, h *wire.Header, body []byte) bool {
	if h.Total > keptData || uint64(len(body)) != h.Total {
		return false
	}
	ts := s.lookup(k.dstThread)
	if ts == nil || ts.arrTail == nilMCB {
		return false
	}
	t := d.e.table.pool.at(ts.arrTail)
	if t.key != k || t.rndv || t.owner != nil || t.expBy != nil || t.total > keptData ||
		t.data == nil && !t.inRun || len(t.run)+runHeader+len(body) > runBytes {
		return false
	}
	if t.run == nil {
		if !d.reserve(runBytes + int64(h.Total)) {
			return false
		}
		b := d.e.runBufs.get()
		if b == nil {
			b = new([runBytes]byte)
		}
		t.run, t.runBuf = b[:0:runBytes], b
	} else if !d.reserve(int64(h.Total)) {
		return false
	}
	var hdr [runHeader]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(body)))
	binary.LittleEndian.PutUint64(hdr[4:], h.MsgID)
	t.run = append(t.run, hdr[:]...)
	t.run = append(t.run, body...)
	return true
}

// fillRunLocked completes receive r with m's current message and makes
// the run's next message m's current one; m stays in the table. s is m's
// stripe, locked; it unlocks s.
func (e *Engine) fillRunLocked(s *stripe, r *Request, m *mcb) {
	var err error
	if r.buf == nil {
		r.data = append([]byte(nil), m.data...)
	} else {
		n := copy(r.buf, m.data)
		r.data = r.buf[:n]
		if n < len(m.data) {
			err = ErrTruncated
		}
	}
	if !m.inRun && m.data != nil {
		m.keep(&e.bufs)
	}
	r.setFrom(m.key)
	n := m.reserved
	rec := m.run[m.runOff:]
	l := binary.LittleEndian.Uint32(rec)
	m.msgID = binary.LittleEndian.Uint64(rec[4:])
	m.data, m.box, m.inRun = rec[runHeader:runHeader+l:runHeader+l], nil, true
	m.total, m.gotBytes, m.reserved = uint64(l), uint64(l), int64(l)
	m.runOff += int32(runHeader + l)
	s.mu.Unlock()
	e.release(n)
	r.complete(err)
}

// runBufsKept is the most run storages kept free (8 KiB each, 2 MiB).
const runBufsKept = 256

// dropRun gives m's run storage back, if it has any, and reports the
// budget the storage held, for the caller to release; m's data no longer
// points into it.
func (e *Engine) dropRun(m *mcb) int64 {
	if m.runBuf == nil {
		return 0
	}
	e.runBufs.put(m.runBuf, runBufsKept)
	m.run, m.runBuf, m.runOff, m.inRun = nil, nil, 0, false
	return runBytes
}
