package progress

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLineDrawsAfterDelayAndErases(t *testing.T) {
	var b syncBuf
	l := StartOn(&b, 0, time.Millisecond)
	l.Set("roundtrip %s", "64K")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(b.String(), "roundtrip 64K") {
		if time.Now().After(deadline) {
			t.Fatalf("status never drawn: %q", b.String())
		}
		time.Sleep(time.Millisecond)
	}
	l.Stop()
	l.Stop()
	out := b.String()
	if !strings.HasSuffix(out, "\r") {
		t.Errorf("line not erased at Stop: %q", out)
	}
}

func TestLineQuietBeforeDelay(t *testing.T) {
	var b syncBuf
	l := StartOn(&b, time.Hour, time.Millisecond)
	l.Set("x")
	time.Sleep(20 * time.Millisecond)
	l.Stop()
	if b.String() != "" {
		t.Errorf("drew before the delay: %q", b.String())
	}
}

func TestNotTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file reported as a terminal")
	}
	l := Start(f)
	if l != nil {
		t.Error("Start on a file returned a line")
	}
	l.Set("ignored") // nil line: no panic
	l.Stop()
}
