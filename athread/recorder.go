package athread

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// maxDAGThreads bounds the recorded graph; threads beyond it are counted
// but not drawn.
const maxDAGThreads = 100000

// recorder keeps the execution trace (per VP) and the task graph.
type recorder struct {
	trace, dag bool

	nextID atomic.Uint64

	mu      sync.Mutex
	threads []dagThread
	edges   []dagEdge
	mainSeg int32
	dropped uint64
}

type dagThread struct {
	id    uint64
	name  string
	depth int32
}

type edgeKind uint8

const (
	edgeCreate edgeKind = iota
	edgeCont
	edgeJoin
)

type dagEdge struct {
	fromThread uint64
	fromSeg    int32
	toThread   uint64
	toSeg      int32
	kind       edgeKind
}

type traceEvent struct {
	name  string
	id    uint64
	depth int32
	start int64 // ns since the runtime's epoch
	dur   int64
}

func newRecorder(trace, dag bool) *recorder {
	r := &recorder{trace: trace, dag: dag}
	r.threads = append(r.threads, dagThread{id: 0, name: "main"})
	return r
}

func (r *recorder) name(t *task) string { return t.self.label() }

// fork records that the thread running in c (the main program when c is
// nil) created t.
func (r *recorder) fork(c *threadCtx, t *task) {
	t.id = r.nextID.Add(1)
	if !r.dag {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.threads) >= maxDAGThreads {
		r.dropped++
		return
	}
	r.threads = append(r.threads, dagThread{id: t.id, name: r.name(t), depth: t.depth})
	pid, pseg := r.parent(c)
	r.edges = append(r.edges,
		dagEdge{pid, *pseg, t.id, 0, edgeCreate},
		dagEdge{pid, *pseg, pid, *pseg + 1, edgeCont})
	*pseg++
}

func (r *recorder) parent(c *threadCtx) (uint64, *int32) {
	if c == nil {
		return 0, &r.mainSeg
	}
	return c.t.id, &c.t.seg
}

// join records that the thread running in c joined x.
func (r *recorder) join(c *threadCtx, x *task) {
	if !r.dag || x.id == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.threads) >= maxDAGThreads {
		return
	}
	pid, pseg := r.parent(c)
	r.edges = append(r.edges,
		dagEdge{x.id, x.seg, pid, *pseg + 1, edgeJoin},
		dagEdge{pid, *pseg, pid, *pseg + 1, edgeCont})
	*pseg++
}

// segment ends the trace slice of from (if one is open) and opens one for
// to.
func (w *vp) segment(from, to *task) {
	if !w.rt.rec.trace {
		return
	}
	now := int64(time.Since(w.rt.epoch))
	if from != nil && w.curStart != 0 {
		w.traceMu.Lock()
		w.trace = append(w.trace, traceEvent{name: w.rt.rec.name(from), id: from.id, depth: from.depth,
			start: w.curStart, dur: now - w.curStart})
		w.traceMu.Unlock()
		w.curStart = 0
	}
	if to != nil {
		w.curStart = now
		if now == 0 {
			w.curStart = 1
		}
	}
}

// chromeEvent is one event of the Chrome trace-event format.
type chromeEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  uint32         `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// traceEvents returns this process's trace in the Chrome format, with
// timestamps in microseconds since the Unix epoch so that traces of
// several processes line up.
func (rt *Runtime) traceEvents() []chromeEvent {
	if rt.rec == nil || !rt.rec.trace {
		return nil
	}
	base := float64(rt.epoch.UnixNano()) / 1e3
	pid := uint32(rt.proc)
	ev := []chromeEvent{{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": fmt.Sprintf("process %d", rt.proc)}}}
	for _, w := range rt.vps {
		ev = append(ev, chromeEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: w.id, Args: map[string]any{"name": fmt.Sprintf("VP %d", w.id)}})
		w.traceMu.Lock()
		for _, e := range w.trace {
			ev = append(ev, chromeEvent{Name: e.name, Ph: "X", Ts: base + float64(e.start)/1e3, Dur: float64(e.dur) / 1e3,
				Pid: pid, Tid: w.id, Args: map[string]any{"thread": e.id, "depth": e.depth}})
		}
		w.traceMu.Unlock()
	}
	return ev
}

// WriteTrace writes the execution trace as Chrome trace-event JSON (open
// it in Perfetto or chrome://tracing): one track per process and VP, one
// slice per stretch of a thread's body run without interruption (a Join
// that waits ends the slice; the thread's next task starts a new one). In
// a job of several processes, process 0's trace includes the others'
// once Run has returned. Config.Trace must be set.
func (rt *Runtime) WriteTrace(w io.Writer) error {
	ev := rt.traceEvents()
	if rt.cl != nil {
		ev = append(ev, rt.cl.remoteTrace()...)
	}
	bw := bufio.NewWriter(w)
	if err := json.NewEncoder(bw).Encode(map[string]any{"traceEvents": ev, "displayTimeUnit": "ns"}); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteDOT writes the task graph recorded in this process as Graphviz DOT
// (the seed's Figure 5): one cluster per thread holding its tasks in
// order; solid edges are creations, dashed edges continuations, dotted
// edges joins. Config.DAG must be set.
func (rt *Runtime) WriteDOT(w io.Writer) error {
	r := rt.rec
	if r == nil || !r.dag {
		return fmt.Errorf("athread: the runtime does not record the DAG (Config.DAG)")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	segs := map[uint64]int32{}
	for _, e := range r.edges {
		if e.fromSeg+1 > segs[e.fromThread] {
			segs[e.fromThread] = e.fromSeg + 1
		}
		if e.toSeg+1 > segs[e.toThread] {
			segs[e.toThread] = e.toSeg + 1
		}
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph athread {\n\trankdir=TB;\n\tnode [shape=circle, label=\"\", width=0.2];\n")
	for _, th := range r.threads {
		n := segs[th.id]
		if n == 0 {
			n = 1
		}
		fmt.Fprintf(bw, "\tsubgraph cluster_t%d {\n\t\tlabel=\"t%d %s\";\n", th.id, th.id, th.name)
		for s := int32(0); s < n; s++ {
			fmt.Fprintf(bw, "\t\tt%d_%d;\n", th.id, s)
		}
		fmt.Fprintf(bw, "\t}\n")
	}
	for _, e := range r.edges {
		style := "solid"
		switch e.kind {
		case edgeCont:
			style = "dashed"
		case edgeJoin:
			style = "dotted"
		}
		fmt.Fprintf(bw, "\tt%d_%d -> t%d_%d [style=%s];\n", e.fromThread, e.fromSeg, e.toThread, e.toSeg, style)
	}
	if r.dropped > 0 {
		fmt.Fprintf(bw, "\tlabel=\"%d threads not drawn\";\n", r.dropped)
	}
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}

// Utilisation returns, for each VP of this process, the fraction of the
// interval [from, to] it spent running thread bodies, from the trace
// (Config.Trace must be set; nil otherwise).
func (rt *Runtime) Utilisation(from, to time.Time) []float64 {
	if rt.rec == nil || !rt.rec.trace || !to.After(from) {
		return nil
	}
	lo, hi := int64(from.Sub(rt.epoch)), int64(to.Sub(rt.epoch))
	out := make([]float64, len(rt.vps))
	for i, w := range rt.vps {
		var busy int64
		w.traceMu.Lock()
		for _, e := range w.trace {
			busy += overlap(e.start, e.start+e.dur, lo, hi)
		}
		w.traceMu.Unlock()
		out[i] = float64(busy) / float64(hi-lo)
	}
	return out
}

// VPUse is the share of an interval one VP of one process spent running
// thread bodies.
type VPUse struct {
	Proc pcor.ProcID // the process
	VP   int         // the VP's index in that process, from 0
	Busy float64     // 0 to 1
}

// JobUtilisation returns the utilisation of every VP of every process of
// the job over [from, to], ordered by process then VP: this process's from
// its own trace, the others' from the traces process 0 collects when Run
// returns (so in process 0, call it after Run). Config.Trace must be set
// in every process; nil otherwise. The processes' clocks are taken to
// agree (they do on one machine; across machines the skew of their clocks
// shifts the intervals).
func (rt *Runtime) JobUtilisation(from, to time.Time) []VPUse {
	own := rt.Utilisation(from, to)
	if own == nil {
		return nil
	}
	out := make([]VPUse, 0, len(own))
	for i, u := range own {
		out = append(out, VPUse{Proc: rt.proc, VP: i, Busy: u})
	}
	if rt.cl == nil {
		return out
	}
	// Remote events carry microseconds since the Unix epoch.
	lo, hi := from.UnixNano(), to.UnixNano()
	busy := map[VPUse]int64{} // keyed with Busy 0
	for _, e := range rt.cl.remoteTrace() {
		k := VPUse{Proc: pcor.ProcID(e.Pid), VP: e.Tid}
		switch e.Ph {
		case "M":
			if e.Name == "thread_name" {
				busy[k] += 0
			}
		case "X":
			s := int64(e.Ts * 1e3)
			busy[k] += overlap(s, s+int64(e.Dur*1e3), lo, hi)
		}
	}
	keys := slices.SortedFunc(maps.Keys(busy), func(a, b VPUse) int {
		if a.Proc != b.Proc {
			return cmp.Compare(a.Proc, b.Proc)
		}
		return cmp.Compare(a.VP, b.VP)
	})
	for _, k := range keys {
		k.Busy = float64(busy[k]) / float64(hi-lo)
		out = append(out, k)
	}
	return out
}

// overlap is the length of [s, f] inside [lo, hi].
func overlap(s, f, lo, hi int64) int64 {
	s, f = max(s, lo), min(f, hi)
	return max(f-s, 0)
}
