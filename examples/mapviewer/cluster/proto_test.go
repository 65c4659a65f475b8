package cluster

import (
	"errors"
	"testing"
)

func TestProtoRoundTrip(t *testing.T) {
	r := request{ID: 7, Col: 14, Row: 19, Scale: 16}
	got, err := decodeRequest(r.encode())
	if err != nil || got != r {
		t.Fatalf("request %+v %v", got, err)
	}
	rep := reply{ID: 9, W: 2, H: 1, Node: 3, Pix: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	gr, err := decodeReply(rep.encode())
	if err != nil || gr.ID != 9 || gr.W != 2 || gr.Node != 3 || string(gr.Pix) != string(rep.Pix) {
		t.Fatalf("reply %+v %v", gr, err)
	}
	e := reply{ID: 1, Status: statusMissing, Text: "tile x missing"}
	ge, err := decodeReply(e.encode())
	if err != nil || ge.Text != e.Text || !errors.Is(errOf(ge.Status), errOf(statusMissing)) {
		t.Fatalf("error reply %+v %v", ge, err)
	}
	for _, b := range [][]byte{nil, []byte("MV"), append(rep.encode(), 0), append(r.encode(), 0)} {
		if _, err := decodeReply(b); err == nil && len(b) != len(r.encode())+1 {
			t.Errorf("decodeReply(%q) accepted", b)
		}
	}
	// A reply whose pixels were written in place after the header is the
	// same message, in the same memory.
	buf := make([]byte, headerLen+8)
	copy(buf[headerLen:], rep.Pix)
	inPlace := rep
	inPlace.Pix = buf[headerLen:]
	if b := inPlace.encodeTo(buf); &b[0] != &buf[0] || string(b) != string(rep.encode()) {
		t.Errorf("reply encoded in place: %v, want %v in the buffer given", b, rep.encode())
	}
	if b := rep.encodeTo(buf); &b[0] == &buf[0] {
		t.Errorf("reply with its pixels elsewhere encoded over the buffer given")
	}
	if _, err := decodeRequest(make([]byte, 16)); !errors.Is(err, ErrProtocol) {
		t.Errorf("zero request: %v", err)
	}
}

func FuzzDecodeReply(f *testing.F) {
	f.Add(reply{ID: 9, W: 2, H: 1, Pix: make([]byte, 8)}.encode())
	f.Add(reply{Status: statusCorrupt, Text: "bad"}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeReply(b)
		if err == nil && r.Status == statusOK && len(r.Pix) != r.W*r.H*4 {
			t.Fatalf("accepted %d pixel bytes for %dx%d", len(r.Pix), r.W, r.H)
		}
		decodeRequest(b)
	})
}
