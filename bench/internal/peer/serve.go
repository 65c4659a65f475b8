package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pcor-go/pcor/bench/internal/usage"
)

// IsChild reports whether this process was started by Spawn.
func IsChild() bool { return os.Getenv(EnvVar) == "1" }

// TraceEnvVar names the directory a peer process writes its runtime
// trace into (Spawn's traceDir); empty, it writes none.
const TraceEnvVar = "PCOR_BENCH_TRACE"

// TraceFile is the name of the runtime trace of process pid in a trace
// directory: near-<pid>.trace for the measuring process, far-<pid>.trace
// for a peer.
func TraceFile(dir, side string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%d.trace", side, pid))
}

// Serve runs jobs requested on in, one JSON request a line, answering on
// out, until in ends or ctx is done. A running job is stopped on return.
func Serve(ctx context.Context, in io.Reader, out io.Writer, h Handlers) error {
	l := NewLocal(h)
	defer l.Close()
	sc := bufio.NewScanner(in)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var req request
		var rep reply
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			rep.Err = "bad request: " + err.Error()
		} else {
			var err error
			switch req.Op {
			case "start":
				if req.Job == nil {
					err = ErrNoJob
					break
				}
				rep.Addr, err = l.Start(ctx, *req.Job)
			case "go":
				err = l.Go(ctx, req.N)
			case "stop":
				err = l.Stop(ctx)
			case "usage":
				u := usage.Self()
				rep.Usage = &u
			case "counters":
				rep.Counters = l.Counters()
			default:
				rep.Err = "unknown op " + req.Op
			}
			if err != nil {
				rep.Err = err.Error()
			}
		}
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	return sc.Err()
}
