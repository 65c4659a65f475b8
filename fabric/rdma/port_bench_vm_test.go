package rdma

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// BenchmarkPortEcho streams b.N full-size datagrams to an echo process and
// reports the throughput of each direction; compare with
// BenchmarkBaselineWriteBW measured in the same run.
func BenchmarkPortEcho(b *testing.B) {
	requireDevice(b)
	p, err := Listen(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	peer := startPeerB(b, "echo", "RDMA_TEST_TO="+p.LocalEndpoint().String())
	to, _ := p.ParseEndpoint(peer)
	r := startReceiverOpt(p, false)
	body := p.Alloc(MaxDatagram - 8)
	batch := make([]fabric.Datagram, 16)
	heads := make([][8]byte, len(batch))
	b.SetBytes(MaxDatagram)
	b.ResetTimer()
	start := time.Now()
	for seq := 0; seq < b.N; {
		k := 0
		for ; k < len(batch) && seq < b.N; k++ {
			binary.LittleEndian.PutUint64(heads[k][:], uint64(seq))
			batch[k] = fabric.Datagram{Head: heads[k][:], Body: body, To: to}
			seq++
		}
		if _, err := p.Send(batch[:k]); err != nil {
			b.Fatal(err)
		}
	}
	for deadline := time.Now().Add(60 * time.Second); r.count() < b.N; {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d echoed", r.count(), b.N)
		}
		time.Sleep(time.Millisecond)
	}
	el := time.Since(start)
	b.ReportMetric(float64(b.N)*MaxDatagram/el.Seconds()/1e6, "MB/s-each-way")
}
