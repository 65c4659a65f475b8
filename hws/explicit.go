package hws

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/pcor-go/pcor/directory"
)

// EnvGroups names the environment variable holding explicit groups, in
// ParseGroups syntax. pcorrun --groups sets it for every process it starts.
const EnvGroups = "PCOR_GROUPS"

// ErrGroups is wrapped by every error about a groups specification.
var ErrGroups = errors.New("hws: bad groups")

// maxListed bounds the processes one specification may list, so that a
// range such as 0-4000000000 is refused before anything is allocated.
const maxListed = 1 << 20

// ParseGroups reads a groups specification: groups separated by ';', each a
// comma-separated list of process ids and inclusive ranges, e.g.
// "0-3;4,5,6,7" or "0,2;1,3". Blanks are ignored; a process may appear once.
func ParseGroups(s string) ([][]uint32, error) {
	var lists [][]uint32
	seen := map[uint32]bool{}
	n := 0
	for gi, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("%w: group %d is empty in %q", ErrGroups, gi, s)
		}
		var list []uint32
		for _, item := range strings.Split(part, ",") {
			item = strings.TrimSpace(item)
			lo, hi, isRange := strings.Cut(item, "-")
			a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%w: %q is not a process id or range", ErrGroups, item)
			}
			b := a
			if isRange {
				if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 32); err != nil || b < a {
					return nil, fmt.Errorf("%w: %q is not a range", ErrGroups, item)
				}
			}
			if n += int(b - a + 1); n > maxListed {
				return nil, fmt.Errorf("%w: more than %d processes", ErrGroups, maxListed)
			}
			for p := a; p <= b; p++ {
				if seen[uint32(p)] {
					return nil, fmt.Errorf("%w: process %d listed twice", ErrGroups, p)
				}
				seen[uint32(p)] = true
				list = append(list, uint32(p))
			}
		}
		lists = append(lists, list)
	}
	return lists, nil
}

// GroupsFromEnv returns the groups PCOR_GROUPS gives, or nil (and no error)
// when it is not set.
func GroupsFromEnv() ([][]uint32, error) {
	s, ok := os.LookupEnv(EnvGroups)
	if !ok || strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return ParseGroups(s)
}

// Explicit makes the groups of the given members from explicit lists:
// listed processes that are not members (not started yet, or gone) are
// left out, and every member no list names forms a group of its own.
func Explicit(members []directory.Member, lists [][]uint32) (*Groups, error) {
	present := make(map[uint32]bool, len(members))
	for _, m := range members {
		present[m.Proc] = true
	}
	listed := map[uint32]bool{}
	var out [][]uint32
	for _, l := range lists {
		var keep []uint32
		for _, p := range l {
			if listed[p] {
				return nil, fmt.Errorf("%w: process %d listed twice", ErrGroups, p)
			}
			listed[p] = true
			if present[p] {
				keep = append(keep, p)
			}
		}
		out = append(out, keep)
	}
	for _, m := range members {
		if !listed[m.Proc] {
			listed[m.Proc] = true
			out = append(out, []uint32{m.Proc})
		}
	}
	return NewGroups(out)
}
