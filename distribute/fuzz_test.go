package distribute

import (
	"bytes"
	"testing"
)

// FuzzParseHeader: a worker reads the range of each work message from its
// first bytes: any bytes are refused or give a range that encodes back to
// them.
func FuzzParseHeader(f *testing.F) {
	f.Add(header(nil, Range{0, 100}))
	f.Add(append(header(nil, Range{5, 5}), 1, 2, 3))
	f.Add(header(nil, Range{1 << 53, 1 << 53}))
	f.Add(header(nil, Range{Lo: 10, Hi: 3}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, ok := parseHeader(b)
		if !ok {
			return
		}
		if r.Lo < 0 || r.Lo > r.Hi || r.Hi > 1<<53 {
			t.Fatalf("accepted range %+v", r)
		}
		if !bytes.Equal(header(nil, r), b[:headerLen]) {
			t.Fatalf("range %+v does not encode back to %x", r, b[:headerLen])
		}
	})
}
