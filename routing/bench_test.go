package routing

import (
	"fmt"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// benchMembers is a cluster of n processes on two networks (both direct)
// plus n processes on a third behind two gateways.
func benchMembers(n int) []directory.Member {
	var ms []directory.Member
	for i := range n {
		ms = append(ms, member(uint32(i),
			port("udp", "eth", 20*time.Microsecond, 100e6),
			port("rdma", "ib", 5*time.Microsecond, 10e9)))
	}
	ms = append(ms, member(uint32(n), port("rdma", "ib", 0, 0), udp("far")))
	ms = append(ms, member(uint32(n+1), port("rdma", "ib", 0, 0), udp("far")))
	for i := range n {
		ms = append(ms, member(uint32(n+2+i), udp("far")))
	}
	return ms
}

func BenchmarkLookup(b *testing.B) {
	tb := Build(0, benchMembers(64))
	dsts := tb.Destinations()
	sizes := []int64{64, 4096, 1 << 16, 1 << 24}
	b.ReportAllocs()
	var sink int
	i := 0
	for b.Loop() {
		r, ok := tb.Lookup(dsts[i%len(dsts)], sizes[i%len(sizes)])
		if ok {
			sink += r.Port
		}
		i++
	}
	_ = sink
}

func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{16, 128} {
		ms := benchMembers(n)
		b.Run(fmt.Sprint(len(ms)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Build(0, ms)
			}
		})
	}
}

// BenchmarkMapBaseline is the floor Lookup is measured against: one map
// access returning a Route by value.
func BenchmarkMapBaseline(b *testing.B) {
	tb := Build(0, benchMembers(64))
	m := map[uint32]Route{}
	for _, r := range tb.Routes() {
		m[r.Dst] = r
	}
	dsts := tb.Destinations()
	sizes := []int64{64, 4096, 1 << 16, 1 << 24}
	b.ReportAllocs()
	var sink int
	i := 0
	for b.Loop() {
		r := m[dsts[i%len(dsts)]]
		sink += r.Port + int(sizes[i%len(sizes)])
		i++
	}
	_ = sink
}

// BenchmarkObserveSend is the cost of a passive sample: what a node that
// measures its links adds to each blocking send.
func BenchmarkObserveSend(b *testing.B) {
	var p Prices
	l := Link{Peer: 1, Fabric: "udp", Network: "a"}
	for _, s := range ProbeSizes {
		for range 5 {
			p.Observe(l, s, time.Duration(10000+s/100))
		}
	}
	p.Refit()
	for b.Loop() {
		p.ObserveSend(l, 8000, 30*time.Microsecond)
	}
}
