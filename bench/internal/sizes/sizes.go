// Package sizes parses and formats the message-size lists of the benchmark
// command line: "1,64K,2M", ranges "1-16K" (powers of two between the
// bounds) and "1-64M:4" (every fourth power of two).
package sizes

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Max is the largest message size accepted (64 MiB).
const Max = 64 << 20

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("sizes: bad size list")

// Default is 1 B to 16 KiB in powers of two (the paper's Figure 3 range).
func Default() []int { return Range(1, 16<<10, 1) }

// Range lists the powers of two from lo to hi (both rounded as needed),
// every step-th one, with hi itself always included.
func Range(lo, hi, step int) []int {
	var out []int
	i := 0
	for s := 1; s <= hi; s <<= 1 {
		if s < lo {
			continue
		}
		if i%step == 0 {
			out = append(out, s)
		}
		i++
	}
	if len(out) == 0 || out[len(out)-1] != hi {
		out = append(out, hi)
	}
	return out
}

// Parse reads a comma-separated list of sizes and ranges. A size is a
// number with an optional suffix K, M or G (powers of 1024, an optional
// trailing "B" or "iB" is accepted). A range "lo-hi" expands to the powers
// of two from lo to hi; "lo-hi:n" keeps every n-th. The result keeps the
// order given, without duplicates. Every size lies in 1..Max.
func Parse(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrSyntax)
	}
	var out []int
	seen := map[int]bool{}
	add := func(v int) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if lo, hi, ok := strings.Cut(part, "-"); ok {
			step := 1
			if h, st, ok := strings.Cut(hi, ":"); ok {
				n, err := strconv.Atoi(st)
				if err != nil || n < 1 {
					return nil, fmt.Errorf("%w: step %q in %q", ErrSyntax, st, part)
				}
				hi, step = h, n
			}
			l, err := One(lo)
			if err != nil {
				return nil, err
			}
			h, err := One(hi)
			if err != nil {
				return nil, err
			}
			if l > h {
				return nil, fmt.Errorf("%w: range %q runs backwards", ErrSyntax, part)
			}
			for _, v := range Range(l, h, step) {
				add(v)
			}
			continue
		}
		v, err := One(part)
		if err != nil {
			return nil, err
		}
		add(v)
	}
	return out, nil
}

// One parses a single size such as "64", "64K", "2MiB".
func One(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "IB")
	t = strings.TrimSuffix(t, "B")
	mul := 1
	switch {
	case strings.HasSuffix(t, "K"):
		mul, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mul, t = 1<<20, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mul, t = 1<<30, t[:len(t)-1]
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a size", ErrSyntax, s)
	}
	if n < 1 || n > Max/int64(mul) {
		return 0, fmt.Errorf("%w: %q outside 1B..64MiB", ErrSyntax, s)
	}
	return int(n) * mul, nil
}

// Format writes a size the way Parse reads it: 1, 512, 4K, 2M, 1536.
func Format(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	}
	return strconv.Itoa(n)
}
