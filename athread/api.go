package athread

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/pcor-go/pcor/pcor"
)

// Handle identifies a created thread; Join waits for it and returns its
// output. A Handle may be joined by any thread of the process, any number
// of times.
type Handle[O any] struct {
	t   task
	out O
}

type thread[I, O any] struct {
	Handle[O]
	f  *Func[I, O]
	in I
}

func (th *thread[I, O]) run(ctx context.Context) error {
	out, err := th.f.fn(ctx, th.in)
	th.out = out
	return err
}

func (th *thread[I, O]) label() string { return th.f.label }

func (th *thread[I, O]) packIn(buf []byte) ([]byte, error)  { return th.f.in.Append(buf, th.in) }
func (th *thread[I, O]) packOut(buf []byte) ([]byte, error) { return th.f.out.Append(buf, th.out) }

func (th *thread[I, O]) unpackOut(data []byte) error {
	out, err := th.f.out.Decode(data)
	th.out = out
	return err
}

// threadCtx is the context a thread body receives: the creator's context
// plus the VP running the body.
type threadCtx struct {
	context.Context
	w *vp
	t *task
}

type ctxKey struct{}

func (c *threadCtx) Value(key any) any {
	if key == (ctxKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func threadOf(ctx context.Context) *threadCtx {
	if c, ok := ctx.(*threadCtx); ok {
		return c
	}
	c, _ := ctx.Value(ctxKey{}).(*threadCtx)
	return c
}

// Create starts a thread running f(ctx, in) and returns its handle. ctx
// is a thread body's context (or one derived from it), or carries a
// runtime (see WithRuntime) when the caller is not a thread; the new
// thread's context derives from it. attr, if given, holds the thread's
// attributes (only the first is used).
func Create[I, O any](ctx context.Context, f *Func[I, O], in I, attr ...Attr) *Handle[O] {
	th := &thread[I, O]{f: f, in: in}
	th.t.self = th
	th.t.fn = f.info
	var a Attr
	if len(attr) > 0 {
		a = attr[0]
	}
	start(ctx, &th.t, a)
	return &th.Handle
}

// Go starts a thread running the closure fn, in this process only.
func Go[O any](ctx context.Context, fn func(ctx context.Context) (O, error)) *Handle[O] {
	return goLabel(ctx, "go", fn)
}

func goLabel[O any](ctx context.Context, label string, fn func(ctx context.Context) (O, error)) *Handle[O] {
	th := &thread[struct{}, O]{f: &Func[struct{}, O]{label: label, fn: func(ctx context.Context, _ struct{}) (O, error) { return fn(ctx) }}}
	th.t.self = th
	start(ctx, &th.t, Attr{Place: Here})
	return &th.Handle
}

// Join waits until the thread has finished and returns its output, or the
// error its body returned, a *PanicError, a *PeerError, ErrClosed, or the
// context's error if ctx ends first (the thread goes on). Joined from a
// thread body, Join does not block its VP: while the thread is unfinished
// the VP runs other ready threads (its own first).
func (h *Handle[O]) Join(ctx context.Context) (O, error) {
	if h.t.state.Load() != stateDone {
		if err := h.t.rt.join(ctx, &h.t); err != nil {
			var zero O
			return zero, err
		}
	}
	if rec := h.t.rt.rec; rec != nil {
		rec.join(threadOf(ctx), &h.t)
	}
	if h.t.err != nil {
		var zero O
		return zero, h.t.err
	}
	return h.out, nil
}

// Done reports whether the thread has finished (Join would not wait).
func (h *Handle[O]) Done() bool { return h.t.state.Load() == stateDone }

// Addr waits until a thread created with Place OnProc has started and
// returns the address of its endpoint. For a thread in another process the
// first call asks that process for it (a message each way), unless the
// thread has ended, whose result carried it.
func (h *Handle[O]) Addr(ctx context.Context) (pcor.Addr, error) {
	if h.t.started == nil {
		return pcor.Addr{}, errors.New("athread: the thread was not created with Place OnProc")
	}
	select {
	case <-h.t.started:
	default:
		if cl := h.t.rt.cl; cl != nil {
			cl.where(&h.t)
		}
		select {
		case <-h.t.started:
		case <-ctx.Done():
			return pcor.Addr{}, ctx.Err()
		}
	}
	if h.t.addr == (pcor.Addr{}) && h.t.endpt == nil && h.t.state.Load() == stateDone && h.t.err != nil {
		return pcor.Addr{}, h.t.err
	}
	return h.t.addr, nil
}

// Endpoint returns the pcor thread endpoint of the thread whose body
// received ctx: threads created with Place OnProc have one from their
// start; others get one on first use. It returns nil outside a thread or
// in a runtime without a node.
func Endpoint(ctx context.Context) *pcor.Thread {
	c := threadOf(ctx)
	if c == nil || c.t.rt.node == nil {
		return nil
	}
	if c.t.endpt == nil {
		c.t.endpt = c.t.rt.node.NewThread()
	}
	return c.t.endpt
}

// Proc returns the process the thread whose body received ctx runs in.
func Proc(ctx context.Context) pcor.ProcID {
	if c := threadOf(ctx); c != nil {
		return c.t.rt.proc
	}
	if rt := runtimeOf(ctx); rt != nil {
		return rt.proc
	}
	return 0
}

// VP returns the index of the VP running the thread body that received
// ctx, or -1.
func VP(ctx context.Context) int {
	if c := threadOf(ctx); c != nil && c.w != nil {
		return c.w.id
	}
	return -1
}

// safeRun runs a thread body, turning a panic into a *PanicError.
func safeRun(r runner, ctx context.Context, proc pcor.ProcID) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack(), Proc: proc}
		}
	}()
	return r.run(ctx)
}

type rtKey struct{}

// WithRuntime returns a context carrying rt, for Create calls made outside
// any thread (the program's main goroutine, for example).
func WithRuntime(ctx context.Context, rt *Runtime) context.Context {
	return context.WithValue(ctx, rtKey{}, rt)
}

func runtimeOf(ctx context.Context) *Runtime {
	rt, _ := ctx.Value(rtKey{}).(*Runtime)
	return rt
}

func start(ctx context.Context, t *task, a Attr) {
	c := threadOf(ctx)
	var rt *Runtime
	if c != nil {
		rt = c.t.rt
		t.depth = c.t.depth + 1
		t.ctx = c.Context
		if ctx != context.Context(c) {
			t.ctx = ctx
		}
	} else {
		rt = runtimeOf(ctx)
		if rt == nil {
			panic("athread: Create with a context that is neither a thread's nor made by WithRuntime")
		}
		t.ctx = ctx
	}
	t.rt = rt
	t.attr = a
	if a.Place == OnProc && t.fn == nil {
		t.finish(fmt.Errorf("athread: a thread placed on process %d needs a registered function", a.Proc))
		return
	}
	rt.submit(c, t)
}
