package directory

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode feeds arbitrary bytes through the frame reader and the
// message decoder: neither may panic, allocate beyond the limit, or accept
// a message that does not survive re-encoding.
func FuzzDecode(f *testing.F) {
	p := uint32(3)
	for _, m := range []*message{
		{Type: msgJoin, Version: 1, JobKey: 42, Proc: &p, Host: "h", Ports: testPorts("127.0.0.1:9")},
		{Type: msgWelcome, Proc: &p, Members: []Member{{Proc: 3, Ports: testPorts("10.0.0.1:1")}}, Interval: 500, Timeout: 2000},
		{Type: msgEvent, Event: &wireEvent{Kind: Left, Member: Member{Proc: 2}, Reason: ReasonHeartbeat}},
		{Type: msgRefuse, Code: codeJobKey, Error: "wrong job key"},
		{Type: msgPing},
	} {
		b, _ := encodeMessage(m)
		var buf bytes.Buffer
		writeFrame(&buf, b)
		f.Add(buf.Bytes())
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 0})
	const limit = 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			b, err := readFrame(r, limit)
			if err != nil {
				return
			}
			if len(b) > limit {
				t.Fatalf("frame of %d bytes above the %d limit", len(b), limit)
			}
			m, err := decodeMessage(b)
			if err != nil {
				if !errors.Is(err, ErrProtocol) {
					t.Fatalf("decode error %v does not wrap ErrProtocol", err)
				}
				continue
			}
			again, err := encodeMessage(m)
			if err != nil {
				t.Fatalf("re-encoding %+v: %v", m, err)
			}
			m2, err := decodeMessage(again)
			if err != nil {
				t.Fatalf("re-decoding %s: %v", again, err)
			}
			if !reflect.DeepEqual(m, m2) {
				t.Fatalf("round trip changed %+v into %+v", m, m2)
			}
		}
	})
}
