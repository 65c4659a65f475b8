package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/pcor-go/pcor/internal/cpuquota"
)

// parseCPUShares parses --cpu-share: comma-separated rank=percent pairs,
// e.g. "1=100,2=50,3=25" (percent of one CPU; ranks not listed run
// unlimited).
func parseCPUShares(s string) (map[int]float64, error) {
	if s == "" {
		return nil, nil
	}
	out := map[int]float64{}
	for _, f := range strings.Split(s, ",") {
		rk, pc, ok := strings.Cut(strings.TrimSpace(f), "=")
		r, err1 := strconv.Atoi(rk)
		p, err2 := strconv.ParseFloat(strings.TrimSuffix(pc, "%"), 64)
		if !ok || err1 != nil || err2 != nil || r < 0 || !(p > 0) {
			return nil, fmt.Errorf("--cpu-share: bad entry %q (want rank=percent)", f)
		}
		out[r] = p / 100
	}
	return out, nil
}

// cpuShares holds the cgroups made for the ranks given a CPU share.
type cpuShares struct {
	groups map[int]*cpuquota.Group
}

// newCPUShares makes one group per rank with a share.
func newCPUShares(shares map[int]float64, n int) (*cpuShares, error) {
	c := &cpuShares{groups: map[int]*cpuquota.Group{}}
	for r, s := range shares {
		if r >= n {
			c.close()
			return nil, fmt.Errorf("--cpu-share: rank %d, but -n is %d", r, n)
		}
		g, err := cpuquota.New(fmt.Sprintf("pcorrun-%d-rank%d", os.Getpid(), r), s)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("--cpu-share: %w", err)
		}
		c.groups[r] = g
	}
	return c, nil
}

// place moves a started rank into its group, if it has one.
func (c *cpuShares) place(rank, pid int) error {
	if c == nil || c.groups[rank] == nil {
		return nil
	}
	return c.groups[rank].Add(pid)
}

func (c *cpuShares) close() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, g := range c.groups {
		errs = append(errs, g.Close())
	}
	return errors.Join(errs...)
}
