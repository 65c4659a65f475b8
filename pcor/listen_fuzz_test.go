package pcor_test

import (
	"errors"
	"math"
	"testing"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/pcor"
)

// FuzzParseListen: PCOR_LISTEN and PCOR_PRICES come from the environment:
// any text is refused with an error wrapping directory.ErrEnv (PCOR_LISTEN)
// or gives ports with a fabric and an address, each with a cost that
// is not negative, and a price interval that is positive or off.
func FuzzParseListen(f *testing.F) {
	f.Add("10.0.0.1:0@lan,rdma/mlx5_0:1@ib", "30s")
	f.Add("udp/127.0.0.1:0;latency=20us;bandwidth=1.25e9, shm/host/name@local;bandwidth=0", "off")
	f.Add("udp/127.0.0.1:0;latency=-1s", "0")
	f.Add("/x,udp/@n", "-5s")
	f.Add("a@b@;bandwidth=+Inf;latency", "")
	f.Add("x;bandwidth=NaN", "1h")
	f.Fuzz(func(t *testing.T, listen, prices string) {
		ls, cs, err := pcor.ParseListenCosts(listen)
		if err != nil {
			if !errors.Is(err, directory.ErrEnv) {
				t.Fatalf("error %v does not wrap directory.ErrEnv", err)
			}
		} else {
			if len(ls) != len(cs) {
				t.Fatalf("%d ports, %d costs", len(ls), len(cs))
			}
			for i, l := range ls {
				if l.Fabric == "" || l.Addr == "" {
					t.Fatalf("port %+v accepted", l)
				}
				if c := cs[i]; c.Latency < 0 || !(c.Bandwidth >= 0) || math.IsInf(c.Bandwidth, 1) {
					t.Fatalf("cost %+v accepted", c)
				}
			}
		}
		if d, err := pcor.ParsePriceEvery(prices); err == nil && d == 0 {
			t.Fatalf("PCOR_PRICES=%q: an interval of 0", prices)
		}
	})
}
