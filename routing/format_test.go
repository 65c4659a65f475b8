package routing

import (
	"strings"
	"testing"

	"github.com/pcor-go/pcor/directory"
)

func TestFormat(t *testing.T) {
	ms := []directory.Member{
		member(1, udp("x")),
		member(2, udp("x"), udp("y")),
		member(3, udp("y")),
		{Proc: 4},
	}
	var b strings.Builder
	if err := Build(1, ms).Format(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want header, 2 routes and 1 unreachable:\n%s", len(lines), b.String())
	}
	if !strings.HasPrefix(lines[0], "DST ") || !strings.Contains(lines[2], "1>2>3") || !strings.Contains(lines[3], "unreachable") {
		t.Fatalf("unexpected table:\n%s", b.String())
	}
	// Columns are aligned: the PATH column starts at the same place.
	col := strings.Index(lines[0], "PATH")
	for _, line := range lines[1:3] {
		l := []rune(line) // durations print as µs
		if len(l) < col || l[col-1] != ' ' || l[col] == ' ' {
			t.Fatalf("PATH column not aligned at %d:\n%s", col, b.String())
		}
	}
}
