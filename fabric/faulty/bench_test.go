package faulty

import (
	"testing"

	"github.com/pcor-go/pcor/fabric"
	"github.com/pcor-go/pcor/fabric/mem"
)

// BenchmarkSend compares sending a batch of 1 KiB datagrams over mem
// directly and through the wrapper with and without faults.
func BenchmarkSend(b *testing.B) {
	for _, c := range []struct {
		name string
		wrap bool
		f    Faults
	}{
		{"mem", false, Faults{}},
		{"wrapped", true, Faults{Seed: 1}},
		{"faults", true, Faults{Seed: 1, Loss: 0.05, Duplicate: 0.05, Corrupt: 0.05, Reorder: 0.05}},
	} {
		b.Run(c.name, func(b *testing.B) {
			nw := mem.NewNetwork()
			src, _ := nw.Listen("src")
			dst, _ := nw.Listen("dst")
			defer dst.Close()
			var p fabric.Port = src
			if c.wrap {
				p = Wrap(src, c.f)
			}
			defer p.Close()
			body := make([]byte, 1024)
			dgs := make([]fabric.Datagram, 32)
			for i := range dgs {
				dgs[i] = fabric.Datagram{Body: body, To: dst.LocalEndpoint()}
			}
			msgs := make([][]byte, 64)
			b.SetBytes(int64(len(dgs) * len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Send(dgs); err != nil {
					b.Fatal(err)
				}
				for {
					n, _ := dst.Poll(msgs)
					if n == 0 {
						break
					}
				}
			}
		})
	}
}
