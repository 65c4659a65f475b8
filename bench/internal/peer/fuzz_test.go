package peer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// FuzzServe: a peer process reads its requests, one JSON object a line,
// from the process that started it. Any bytes get one reply a line, each
// a JSON reply (an error for what cannot be read), and never a panic.
func FuzzServe(f *testing.F) {
	for _, rs := range [][]request{
		{{Op: "start", Job: &Job{Kind: "echo", Addr: "near", Size: 7}}, {Op: "go", N: 3}, {Op: "counters"}, {Op: "usage"}, {Op: "stop"}},
		{{Op: "start", Job: &Job{Kind: "fail"}}, {Op: "go", N: -1}, {Op: "start"}, {Op: "nope"}},
		{{Op: "start", Job: &Job{Kind: "echo"}}, {Op: "start", Job: &Job{Kind: "echo"}}, {Op: "go", N: -2}},
	} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for _, r := range rs {
			enc.Encode(r)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte("{\"op\":\"go\",\"n\":1e99}\n{\"op\":\n\n[]\nnull\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		lines := 0
		sc := bufio.NewScanner(bytes.NewReader(in))
		for sc.Scan() {
			lines++
		}
		var out bytes.Buffer
		err := Serve(context.Background(), bytes.NewReader(in), &out, testHandlers)
		if (err != nil) != (sc.Err() != nil) {
			t.Fatalf("Serve: %v; a scanner of the same input: %v", err, sc.Err())
		}
		n := 0
		dec := json.NewDecoder(&out)
		for dec.More() {
			var rep reply
			if err := dec.Decode(&rep); err != nil {
				t.Fatalf("reply %d: %v", n, err)
			}
			n++
		}
		if n != lines {
			t.Fatalf("%d replies to %d lines", n, lines)
		}
	})
}
