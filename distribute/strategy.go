package distribute

import (
	"fmt"
	"math"
)

// Strategy is a way of splitting work among workers.
type Strategy int

// The strategies of PEMPIs-Het (the package documentation gives each
// one's range sizes).
const (
	SS     Strategy = iota // self-scheduling: Plan.Chunk units a request
	GSS                    // guided self-scheduling: ⌈R/P⌉ of the R units left
	Static                 // one range a worker at the start, by the VRP or even
	VRPSS                  // phases of ranges sized by the VRP, revised as it goes
)

var strategyNames = []string{"SS", "GSS", "static", "VRP-SS"}

func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// ParseStrategy parses a strategy name as String prints it (any case).
func ParseStrategy(name string) (Strategy, error) {
	for i, n := range strategyNames {
		if equalFold(n, name) {
			return Strategy(i), nil
		}
	}
	return 0, fmt.Errorf("distribute: unknown strategy %q", name)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Range is the units [Lo, Hi).
type Range struct{ Lo, Hi int }

// Len is the number of units in r.
func (r Range) Len() int { return r.Hi - r.Lo }

// Shares splits total units by the VRP as the static strategy does:
// Δ_i = ul·VRP[i] with ul = total/ΣVRP, rounded by largest remainders so
// that the shares sum to total (rounding every share up, as the
// formulation ⌈ul·VRP[i]⌉ does, would hand out more than total). A nil
// vrp splits evenly.
func Shares(total int, vrp []float64, workers int) []int {
	v := weights(vrp, workers)
	var sum float64
	for _, x := range v {
		sum += x
	}
	out := make([]int, workers)
	frac := make([]float64, workers)
	left := total
	for i, x := range v {
		exact := float64(total) * x / sum
		out[i] = int(math.Floor(exact))
		frac[i] = exact - float64(out[i])
		left -= out[i]
	}
	for ; left > 0; left-- {
		best := 0
		for i := range frac {
			if frac[i] > frac[best] {
				best = i
			}
		}
		out[best]++
		frac[best] = -1
	}
	return out
}

// weights returns vrp, or all ones when vrp does not cover the workers or
// holds a non-positive entry.
func weights(vrp []float64, workers int) []float64 {
	v := make([]float64, workers)
	ok := len(vrp) == workers
	for i := range v {
		v[i] = 1
		if ok && vrp[i] > 0 && !math.IsInf(vrp[i], 1) {
			v[i] = vrp[i]
		} else {
			ok = false
		}
	}
	if !ok {
		for i := range v {
			v[i] = 1
		}
	}
	return v
}
