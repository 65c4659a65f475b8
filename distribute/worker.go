package distribute

import (
	"context"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// ServeStats is what a worker did.
type ServeStats struct {
	Units, Chunks int
	Compute       time.Duration // time spent in the work function
}

// Serve runs a worker on thread th: it receives ranges from any master
// thread, computes each with do and sends the result back, until it is
// told to stop (nil error), the context ends or do fails. Malformed work
// messages are ignored.
func Serve(ctx context.Context, th *pcor.Thread, do func(r Range, input []byte) ([]byte, error)) (ServeStats, error) {
	var st ServeStats
	out := make([]byte, 0, headerLen)
	for {
		m, err := th.Recv(ctx, pcor.Any, TagWork)
		if err != nil {
			return st, err
		}
		r, ok := parseHeader(m.Data)
		if !ok {
			continue
		}
		if r.Len() == 0 {
			return st, nil
		}
		t0 := time.Now()
		res, err := do(r, m.Data[headerLen:])
		if err != nil {
			return st, err
		}
		st.Compute += time.Since(t0)
		st.Units += r.Len()
		st.Chunks++
		out = append(header(out[:0], r), res...)
		if err := th.Send(ctx, m.Src, TagResult, out); err != nil {
			return st, err
		}
	}
}
