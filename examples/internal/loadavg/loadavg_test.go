package loadavg

import (
	"os"
	"testing"
)

func TestFieldAndValue(t *testing.T) {
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		t.Skip("no /proc/loadavg here")
	}
	f := Field()
	v, ok := Value()
	if f == "?" || !ok || v < 0 {
		t.Fatalf("Field %q, Value %v %v", f, v, ok)
	}
}
