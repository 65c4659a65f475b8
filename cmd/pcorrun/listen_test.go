package main

import (
	"net"
	"strings"
	"testing"
)

// A directory port another job holds fails at once, saying so.
func TestListenPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, out, errs := runHelper(t, "env", "-n", "1", "--listen", ln.Addr().String())
	if code == 0 || !strings.Contains(errs, "address already in use") || !strings.Contains(errs, "another job's directory") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}
