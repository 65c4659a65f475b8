package directory

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	for _, p := range [][]byte{[]byte("x"), bytes.Repeat([]byte("ab"), 1000)} {
		if err := writeFrame(&buf, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []int{1, 2000} {
		b, err := readFrame(&buf, 4096)
		if err != nil || len(b) != want {
			t.Fatalf("read %d bytes, %v; want %d", len(b), err, want)
		}
	}
	if _, err := readFrame(&buf, 4096); err != io.EOF {
		t.Fatalf("at end: %v", err)
	}
}

func TestFrameLimits(t *testing.T) {
	huge := []byte{0xff, 0xff, 0xff, 0xff}
	allocs := testing.AllocsPerRun(10, func() {
		_, err := readFrame(bytes.NewReader(huge), 1<<20)
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("4 GiB frame: %v", err)
		}
	})
	// The error value allocates; a 4 GiB buffer would show as far more
	// than a handful of allocations' worth of time and memory, so check
	// the count stays that of building the error.
	if allocs > 8 {
		t.Fatalf("%v allocations rejecting an oversized frame", allocs)
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 0}), 10); !errors.Is(err, ErrProtocol) {
		t.Fatalf("empty frame: %v", err)
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 5, 'a'}), 10); err != io.ErrUnexpectedEOF {
		t.Fatalf("short frame: %v", err)
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 0}), 10); err != io.ErrUnexpectedEOF {
		t.Fatalf("short header: %v", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, s := range []string{
		`nonsense`,
		`{}`,
		`{"t":"what"}`,
		`{"t":"join"}`,
		`{"t":"welcome","interval":1,"timeout":2}`,
		`{"t":"welcome","proc":1,"interval":0,"timeout":2}`,
		`{"t":"welcome","proc":1,"interval":3,"timeout":2}`,
		`{"t":"event"}`,
		`{"t":"event","event":{"kind":7,"member":{"proc":1}}}`,
		`{"t":"join","v":1,"ports":[{"fabric":"udp"}]}`,
		`{"t":"join","v":1,"ports":[{"fabric":"udp","addr":"a","bandwidth":-1}]}`,
		`{"t":"join","v":1,"key":-1}`,
		`{"t":"join","v":1,"proc":4294967296}`,
	} {
		if m, err := decodeMessage([]byte(s)); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: decoded %+v, %v", s, m, err)
		}
	}
}

// TestMalformedInputClosesOnlyThatConnection sends garbage on raw
// connections and checks that the server drops each of them alone.
func TestMalformedInputClosesOnlyThatConnection(t *testing.T) {
	s := startServer(t, ServerConfig{Size: 2})
	a := join(t, s, 0)
	var oversized [4]byte
	binary.BigEndian.PutUint32(oversized[:], DefaultMaxFrame+1)
	garbage := append([]byte{0, 0, 0, 9}, "not json!"...)
	joined := func() []byte {
		p := uint32(1)
		b, _ := encodeMessage(&message{Type: msgJoin, Version: protoVersion, JobKey: testKey, Proc: &p})
		var buf bytes.Buffer
		writeFrame(&buf, b)
		return buf.Bytes()
	}()
	for name, input := range map[string][]byte{
		"oversized":            oversized[:],
		"garbage":              garbage,
		"empty frame":          {0, 0, 0, 0},
		"join then garbage":    append(append([]byte{}, joined...), garbage...),
		"join then oversized":  append(append([]byte{}, joined...), oversized[:]...),
		"join then wrong type": append(append([]byte{}, joined...), 0, 0, 0, 13, '{', '"', 't', '"', ':', '"', 'j', 'o', 'i', 'n', '"', ',', '}'),
	} {
		conn, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(input)
		conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		// The server answers (welcome, pings) and then closes: read to EOF.
		if _, err := io.Copy(io.Discard, conn); err != nil {
			t.Fatalf("%s: connection not closed by the server: %v", name, err)
		}
		conn.Close()
		if bytes.HasPrefix(input, joined) {
			if ev := nextEvent(t, a, 2*time.Second); ev.Kind != Joined {
				t.Fatalf("%s: got %+v", name, ev)
			}
			if ev := nextEvent(t, a, 2*time.Second); ev.Kind != Left || ev.Reason != ReasonProtocol {
				t.Fatalf("%s: got %+v, want left (protocol error)", name, ev)
			}
		}
	}
	noEvent(t, a, 100*time.Millisecond)
	if a.Err() != nil {
		t.Fatalf("well-behaved client hurt: %v", a.Err())
	}
	join(t, s, 1)
}
