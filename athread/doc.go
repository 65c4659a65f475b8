// Package athread is Anahy's fork/join programming model on pcor: threads
// are created and joined like POSIX threads, the runtime turns the forks
// and joins into a graph of tasks, and virtual processors (VPs) in every
// process of the job execute that graph, stealing work inside a process
// and moving threads between processes.
//
// # Threads
//
// A thread body is a function with typed input and output:
//
//	var fib *athread.Func[int, int]
//
//	func init() {
//		fib = athread.Register("fib", func(ctx context.Context, n int) (int, error) {
//			if n < 2 {
//				return n, nil
//			}
//			a := athread.Create(ctx, fib, n-1)
//			b := athread.Create(ctx, fib, n-2)
//			x, err := a.Join(ctx)
//			if err != nil {
//				return 0, err
//			}
//			y, err := b.Join(ctx)
//			return x + y, err
//		}, athread.Fixed[int](), athread.Fixed[int]())
//	}
//
// Create (athread_create) starts a thread and returns a *Handle; Join
// (athread_join) returns its output and error. A body may create and join
// threads to any depth; the context it receives carries its place in the
// graph and must be the one given to Create and Join (or derived from it),
// on the body's own goroutine. Code outside any thread creates threads
// with a context from Runtime.Context or WithRuntime. Go starts a closure
// as a thread of this process.
//
// Attr holds a thread's attributes: where it may run (Anywhere, Here, or
// OnProc a given process), a cost hint, and whether it may be re-run
// (Idempotent).
//
// # Pack and unpack: codecs
//
// A function registered with Register has a name and a Codec for its input
// and its output, so its threads may run in any process; a Local function
// runs only where its threads are created (Anahy's NULL pack/unpack).
// Fixed (numbers, arrays and structs of them), Bytes, String, None, Binary
// (encoding.BinaryMarshaler) and Gob are provided; CodecFuncs makes one
// from two functions. Every process of a job must register the same
// functions in the same order (registration in init functions does that);
// New compares the registrations of all processes at start-up and fails
// with an error wrapping ErrRegistry that names the difference.
//
// # Scheduling
//
// The schedule has three levels, as in Anahy. (1) Each process runs
// Config.VPs VPs (default $ATHREAD_VPS, else GOMAXPROCS) as goroutines on
// the Go scheduler. (2) Inside a process, each VP runs the threads it
// creates from its own deque, newest first; an idle VP steals the oldest
// thread of the VP whose oldest thread is the shallowest (closest to the
// root of the thread tree, likely the most work). A Join on an unfinished
// thread does not block its VP: the VP runs other ready threads (its own
// first, the joined thread itself if it has not started) until the joined
// thread is done, and sleeps only when there is nothing to run. (3)
// Between processes, an idle process asks another for work over pcor; the
// victim hands over an offered thread, the shallowest first, then the
// costliest, then the one with the smallest packed input; the thread's
// result travels back to the process that created it, where its Join
// waits.
//
// # Between-process policy
//
// The third level is a Policy: Classify decides, when a thread of a
// registered function is created, whether it is offered to other processes
// (ClassGlobal, or a policy's own class) or kept (ClassLocal); Allow
// decides whether an offered thread may go to a given thief; Victim
// chooses whom an idle process asks; Forward may pass a request a process
// cannot serve on to another process, which answers the thief directly.
// Random (the default) offers threads up to a depth limit, lets anyone take
// them and asks a random process. Hierarchical policies (groups with
// masters, global threads above a depth limit and group-local ones below)
// fit the same interface: Classify by depth, Allow by the thief's group,
// Victim within the group or among masters, Forward from a master to other
// masters. An idle process waits for the answer to each request, except
// those an AsyncPolicy marks asynchronous (at most one outstanding: Satin's
// wide-area request), during which it goes on asking; an asynchronous request
// is answered once, with a thread or nothing. A process's own VPs take the
// shallowest offered thread, or under a DepthFirstPolicy the newest (an hws
// master opening its global stack depth first, leaving the oldest threads to
// the other masters).
//
// # Remote threads and failures
//
// A thread created with Attr{Place: OnProc, Proc: p} starts at once in
// process p on a goroutine of its own, with a pcor.Thread endpoint of its
// own (Endpoint); Handle.Addr gives its address to the creator, which may
// message it and join it. If the process running a thread that came from
// another process dies, the thread's Join fails with a *PeerError naming
// the process (errors.Is(err, pcor.ErrPeerDown)), or, for an Idempotent
// thread, the thread is offered again and runs elsewhere. A panic in a body
// becomes a *PanicError with the stack at Join. Close fails threads not yet
// started with ErrClosed, cancels the contexts of running bodies, waits for
// them and ends every goroutine of the runtime.
//
// # Seeing the schedule
//
// With Config.DAG the runtime records the task graph (creation,
// continuation and join edges) and WriteDOT writes it as Graphviz DOT; with
// Config.Trace it records, per VP, when each thread's body ran, and
// WriteTrace writes Chrome trace-event JSON (one track per process and VP)
// that Perfetto opens. Utilisation gives each VP's busy share of an
// interval from the trace, and JobUtilisation that of every VP of every
// process (in process 0 after Run). Counters gives threads run, steals
// tried and won inside and between processes, and bytes moved.
//
// # Jobs of several processes
//
// FromEnv starts a runtime in a process started by pcorrun (or alone, in
// which case it runs in one process), and Run runs the program's main
// function in process 0 while the other processes serve:
//
//	rt, err := athread.FromEnv(ctx, athread.Config{})
//	...
//	defer rt.Close()
//	err = rt.Run(ctx, func(ctx context.Context) error {
//		v, err := athread.Create(ctx, fib, 35).Join(ctx)
//		...
//	})
package athread
