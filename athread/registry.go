package athread

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// Registry holds the functions that may run in other processes, by name.
// Every process of a job must register the same functions, with the same
// types and codecs, in the same order; New checks that with every other
// process at start-up and fails with an error wrapping ErrRegistry when
// they differ.
type Registry struct {
	mu     sync.Mutex
	byName map[string]*funcInfo
	list   []*funcInfo
	frozen bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: map[string]*funcInfo{}} }

// DefaultRegistry is the registry Register uses and runtimes use unless
// Config.Registry says otherwise.
var DefaultRegistry = NewRegistry()

// funcInfo is the untyped view of a registered function.
type funcInfo struct {
	name  string
	index uint32
	sig   string
	// spawn builds a task from packed input, for a thread arriving from
	// another process.
	spawn func(in []byte) (*task, error)
}

func (r *Registry) add(fi *funcInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = map[string]*funcInfo{}
	}
	if r.frozen {
		panic(fmt.Sprintf("athread: Register(%q) after a runtime started with this registry", fi.name))
	}
	if _, dup := r.byName[fi.name]; dup {
		panic(fmt.Sprintf("athread: function %q registered twice", fi.name))
	}
	fi.index = uint32(len(r.list))
	r.byName[fi.name] = fi
	r.list = append(r.list, fi)
}

// freeze stops registration and returns the functions in order.
func (r *Registry) freeze() []*funcInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frozen = true
	return append([]*funcInfo(nil), r.list...)
}

// describe is the registry's text for the start-up check: one line per
// function.
func describe(list []*funcInfo) string {
	var b strings.Builder
	for _, fi := range list {
		fmt.Fprintf(&b, "%s %s\n", fi.name, fi.sig)
	}
	return b.String()
}

// compareRegistries explains the first difference between two
// descriptions, or returns "" when they are equal.
func compareRegistries(mine, theirs string) string {
	if mine == theirs {
		return ""
	}
	a := strings.Split(strings.TrimSuffix(mine, "\n"), "\n")
	b := strings.Split(strings.TrimSuffix(theirs, "\n"), "\n")
	name := func(l string) string { return strings.SplitN(l, " ", 2)[0] }
	ma, mb := map[string]string{}, map[string]string{}
	for _, l := range a {
		if l != "" {
			ma[name(l)] = l
		}
	}
	for _, l := range b {
		if l != "" {
			mb[name(l)] = l
		}
	}
	var diffs []string
	for n, l := range ma {
		if o, ok := mb[n]; !ok {
			diffs = append(diffs, fmt.Sprintf("%q is registered here but not there", n))
		} else if o != l {
			diffs = append(diffs, fmt.Sprintf("%q is %s here but %s there", n, strings.TrimPrefix(l, n+" "), strings.TrimPrefix(o, n+" ")))
		}
	}
	for n := range mb {
		if _, ok := ma[n]; !ok {
			diffs = append(diffs, fmt.Sprintf("%q is registered there but not here", n))
		}
	}
	sort.Strings(diffs)
	if len(diffs) == 0 {
		diffs = append(diffs, "the functions are registered in a different order")
	}
	return strings.Join(diffs, "; ")
}

// Func is a thread body with typed input and output. A Func made by
// Register has a name and codecs and may run in any process of the job; one
// made by Local runs only in the process that created the thread (Anahy's
// NULL pack/unpack).
type Func[I, O any] struct {
	fn    func(ctx context.Context, in I) (O, error)
	label string // for the DAG and trace of unregistered functions
	in    Codec[I]
	out   Codec[O]
	info  *funcInfo
}

// Name is the registered name ("" for a local function).
func (f *Func[I, O]) Name() string {
	if f.info == nil {
		return ""
	}
	return f.info.name
}

// Local makes a Func that never leaves the process that creates its
// threads.
func Local[I, O any](fn func(ctx context.Context, in I) (O, error)) *Func[I, O] {
	return &Func[I, O]{fn: fn, label: "local"}
}

// Register registers fn in DefaultRegistry under name, with codecs for its
// input and output, so that its threads may run in any process. Call it
// the same way in every process (typically from an init function, which
// also lets the body refer to the returned Func to create threads of
// itself). It panics if name is already registered.
func Register[I, O any](name string, fn func(ctx context.Context, in I) (O, error), in Codec[I], out Codec[O]) *Func[I, O] {
	return RegisterIn(DefaultRegistry, name, fn, in, out)
}

// RegisterIn is Register into r.
func RegisterIn[I, O any](r *Registry, name string, fn func(ctx context.Context, in I) (O, error), in Codec[I], out Codec[O]) *Func[I, O] {
	if in == nil || out == nil {
		panic(fmt.Sprintf("athread: Register(%q) needs both codecs", name))
	}
	f := &Func[I, O]{fn: fn, in: in, out: out, label: name}
	f.info = &funcInfo{
		name: name,
		sig: fmt.Sprintf("func(%s) %s codecs %s %s", reflect.TypeFor[I](), reflect.TypeFor[O](),
			codecName(in), codecName(out)),
		spawn: func(data []byte) (*task, error) {
			v, err := in.Decode(data)
			if err != nil {
				return nil, fmt.Errorf("athread: unpacking the input of %q: %w", name, err)
			}
			th := &thread[I, O]{f: f, in: v}
			th.t.self = th
			th.t.fn = f.info
			return &th.t, nil
		},
	}
	r.add(f.info)
	return f
}
