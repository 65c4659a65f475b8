package main

import (
	"slices"
	"testing"
)

// FuzzSplitWords: a command template (--cmd) is split into words or
// refused, never a panic, and the words, quoted for a shell, split back
// into the same words.
func FuzzSplitWords(f *testing.F) {
	f.Add(`prog -x 'a b' "c d" e\ f`)
	f.Add(`'it'\''s'`)
	f.Add(`"unterminated`)
	f.Add(`trailing\`)
	f.Add("   \t\n")
	f.Add(`'' "" x`)
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitWords(s)
		if err != nil {
			return
		}
		if len(words) == 0 {
			t.Fatalf("%q: no words and no error", s)
		}
		q := shellQuote(words)
		again, err := splitWords(q)
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("%q: words %q, quoted %q, split again %q, %v", s, words, q, again, err)
		}
	})
}

// FuzzParseCPUShares: --cpu-share is refused or gives shares that are
// positive fractions of a CPU for ranks that are not negative.
func FuzzParseCPUShares(f *testing.F) {
	f.Add("1=100,2=50,3=25")
	f.Add("0=12.5%")
	f.Add("1=0")
	f.Add("-1=10")
	f.Add("1=NaN,2=Inf")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseCPUShares(s)
		if err != nil {
			return
		}
		for r, p := range m {
			if r < 0 || !(p > 0) {
				t.Fatalf("%q: rank %d share %v accepted", s, r, p)
			}
		}
	})
}
