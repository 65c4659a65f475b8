package sizes

import (
	"errors"
	"testing"
)

// FuzzParse: a size list is refused with ErrSyntax or gives distinct sizes
// in 1..Max, never more than there are sizes in that range's powers of two
// and the parts listed.
func FuzzParse(f *testing.F) {
	f.Add("1,2K,64KiB,1M-4M,16MB")
	f.Add("1-64M:3")
	f.Add("4M-1")
	f.Add("0")
	f.Add("1-2:0")
	f.Add("9999999999999999999G")
	f.Fuzz(func(t *testing.T, s string) {
		vs, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
			return
		}
		seen := map[int]bool{}
		for _, v := range vs {
			if v < 1 || v > Max || seen[v] {
				t.Fatalf("%q: size %d (of %v)", s, v, vs)
			}
			seen[v] = true
		}
	})
}
