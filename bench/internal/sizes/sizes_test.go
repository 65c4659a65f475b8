package sizes

import (
	"errors"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want []int
	}{
		{"1", []int{1}},
		{"1,64K,2M", []int{1, 64 << 10, 2 << 20}},
		{"1-16", []int{1, 2, 4, 8, 16}},
		{"3-16", []int{4, 8, 16}},
		{"1-1K:4", []int{1, 16, 256, 1024}},
		{"4KiB, 4kb,64M", []int{4096, 64 << 20}},
		{"1-10", []int{1, 2, 4, 8, 10}},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.in, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Parse(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	if d := Default(); d[0] != 1 || d[len(d)-1] != 16<<10 || len(d) != 15 {
		t.Errorf("Default() = %v", d)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "0", "-1", "65M", "x", "16-1", "1-4:0", "1,,2", "1G", "K"} {
		if _, err := Parse(in); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) err = %v, want ErrSyntax", in, err)
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for _, n := range []int{1, 100, 1024, 1536, 65536, 2 << 20, 64 << 20} {
		got, err := One(Format(n))
		if err != nil || got != n {
			t.Errorf("One(Format(%d)) = %d, %v", n, got, err)
		}
	}
}
