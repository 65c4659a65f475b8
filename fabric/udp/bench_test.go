//go:build linux

package udp

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pcor-go/pcor/fabric"
)

// Each benchmark moves datagrams from one socket to another on 127.0.0.1
// in rounds of one batch: send the batch, then receive it all, in one
// goroutine, so nothing is lost and the figure is the cost of both sides.
// One op is one datagram. "raw" is the unbatched baseline: one WriteToUDP
// and one ReadFromUDP per datagram on plain net.UDPConns.

func BenchmarkDatagram64(b *testing.B) {
	benchSizes(b, 64, 64)
}

func BenchmarkDatagram1472(b *testing.B) {
	benchSizes(b, 1472, 64)
}

func BenchmarkDatagram64KiB(b *testing.B) {
	benchSizes(b, MaxPayload, 16)
}

func benchSizes(b *testing.B, size, batch int) {
	b.Run("raw", func(b *testing.B) { benchRaw(b, size, batch) })
	b.Run("mmsg", func(b *testing.B) { benchPort(b, Config{DisableGSO: true, DisableGRO: true}, size, batch) })
	b.Run("mmsg+gso+gro", func(b *testing.B) { benchPort(b, Config{}, size, batch) })
}

func benchPort(b *testing.B, cfg Config, size, batch int) {
	cfg.BatchSize = batch
	tx := listen(b, "127.0.0.1:0", cfg)
	rx := listen(b, "127.0.0.1:0", cfg)
	to := rx.LocalEndpoint()
	head := make([]byte, 32)
	body := make([]byte, size-len(head))
	dgs := make([]fabric.Datagram, batch)
	for i := range dgs {
		dgs[i] = fabric.Datagram{Head: head, Body: body, To: to}
	}
	msgs := make([][]byte, batch)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		if _, err := tx.Send(dgs[:n]); err != nil {
			b.Fatal(err)
		}
		rx.SetReceiveDeadline(time.Now().Add(5 * time.Second))
		for got := 0; got < n; {
			k, err := rx.Receive(msgs)
			if err != nil {
				b.Fatalf("Receive: %v (datagram lost?)", err)
			}
			got += k
		}
		done += n
	}
	b.StopTimer()
	reportRate(b)
	s := tx.Stats()
	b.ReportMetric(float64(s.SentDatagrams)/float64(s.SendCalls), "dgram/sendmmsg")
}

func benchRaw(b *testing.B, size, batch int) {
	tx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	tx.SetWriteBuffer(DefaultBufferSize)
	rx.SetReadBuffer(DefaultBufferSize)
	to := rx.LocalAddr().(*net.UDPAddr)
	buf := make([]byte, size)
	rbuf := make([]byte, RecvBufferSize)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		for range n {
			if _, err := tx.WriteToUDP(buf, to); err != nil {
				b.Fatal(err)
			}
		}
		rx.SetReadDeadline(time.Now().Add(5 * time.Second))
		for range n {
			if _, _, err := rx.ReadFromUDP(rbuf); err != nil {
				b.Fatalf("ReadFromUDP: %v (datagram lost?)", err)
			}
		}
		done += n
	}
	b.StopTimer()
	reportRate(b)
}

func reportRate(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "dgram/s")
	}
}

// BenchmarkPollEmpty is one look at an empty port: the step of a polling
// thread's spin, beside a non-blocking read(2) of a socket ("raw").
func BenchmarkPollEmpty(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 64)
		for i := 0; i < b.N; i++ {
			unix.Read(fd, buf)
		}
	})
	b.Run("port", func(b *testing.B) {
		p := listen(b, "127.0.0.1:0", Config{})
		msgs := make([][]byte, p.BatchSize())
		for i := 0; i < b.N; i++ {
			p.Poll(msgs)
		}
	})
}

// BenchmarkDatagramAlone sends one datagram of a 96-byte head and a 1-byte
// body per Send, as a ping-pong's leg does, and receives it; one op is one
// datagram sent and received.
func BenchmarkDatagramAlone(b *testing.B) {
	tx := listen(b, "127.0.0.1:0", Config{})
	rx := listen(b, "127.0.0.1:0", Config{})
	dgs := []fabric.Datagram{{Head: make([]byte, 96), Body: make([]byte, 1), To: rx.LocalEndpoint()}}
	msgs := make([][]byte, 1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := tx.Send(dgs); err != nil {
			b.Fatal(err)
		}
		// Loopback delivers during the send: the first look finds it.
		for k := 0; k < 1000; k++ {
			n, err := rx.Poll(msgs)
			if err != nil {
				b.Fatal(err)
			}
			if n == 1 {
				break
			}
		}
	}
}
