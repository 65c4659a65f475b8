package hws

import (
	"errors"
	"testing"
)

// FuzzParseGroups: PCOR_GROUPS comes from the environment: any text is
// refused with ErrGroups, without allocating for the processes a range
// claims beyond the bound, or gives non-empty groups that list each
// process once and at most maxListed in all.
func FuzzParseGroups(f *testing.F) {
	f.Add("0-3;4,5,6,7")
	f.Add("0,2;1,3")
	f.Add(" 0 - 1 ; 2 ")
	f.Add("0-4000000000")
	f.Add("4294967290-4294967295")
	f.Add("1;1")
	f.Add(";")
	f.Fuzz(func(t *testing.T, s string) {
		gs, err := ParseGroups(s)
		if err != nil {
			if !errors.Is(err, ErrGroups) {
				t.Fatalf("error %v does not wrap ErrGroups", err)
			}
			return
		}
		seen := map[uint32]bool{}
		for _, g := range gs {
			if len(g) == 0 {
				t.Fatalf("%q: an empty group", s)
			}
			for _, p := range g {
				if seen[p] {
					t.Fatalf("%q: process %d twice", s, p)
				}
				seen[p] = true
			}
		}
		if len(seen) > maxListed {
			t.Fatalf("%q: %d processes", s, len(seen))
		}
	})
}

// FuzzParsePolicy: a policy name is refused or parses to a policy whose
// name parses back to it.
func FuzzParsePolicy(f *testing.F) {
	f.Add("hws:12")
	f.Add("CRS")
	f.Add("random:3")
	f.Add("hws:65")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		if again, err := Parse(p.String()); err != nil || again != p {
			t.Fatalf("%q: %+v prints %q, which parses as %+v, %v", s, p, p.String(), again, err)
		}
	})
}
