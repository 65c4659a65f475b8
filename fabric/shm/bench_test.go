package shm

import (
	"slices"
	"testing"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// echoPeer is the "echo" role: it sends every datagram back to
// PCOR_SHM_TEST_TO, polling without sleeping.
func echoPeer(p *Port, to fabric.Endpoint) int {
	msgs := make([][]byte, p.BatchSize())
	dgs := make([]fabric.Datagram, p.BatchSize())
	for {
		n, err := p.Poll(msgs)
		if err != nil {
			return 1
		}
		for i, m := range msgs[:n] {
			dgs[i] = fabric.Datagram{Body: m, To: to}
		}
		if n > 0 {
			if _, err := p.Send(dgs[:n]); err != nil {
				return 1
			}
		}
	}
}

// echoTakenPeer is the "echotaken" role: echoPeer as the engine's
// reliable path answers a blocking send, one datagram at a time. It hands
// each datagram's room back (Handled) before it answers, and waits, polling
// its own port, until its answer is taken.
func echoTakenPeer(p *Port, to fabric.Endpoint) int {
	msgs := make([][]byte, 1)
	dg := make([]fabric.Datagram, 1)
	buf := make([]byte, p.cfg.MaxDatagram)
	for {
		n, err := p.Poll(msgs)
		if err != nil {
			return 1
		}
		if n == 0 {
			continue
		}
		dg[0] = fabric.Datagram{Body: buf[:copy(buf, msgs[0])], To: to}
		p.Handled()
		if _, err := p.Send(dg); err != nil {
			return 1
		}
		for {
			taken, err := p.Taken(to)
			if err != nil {
				return 1
			}
			if taken {
				break
			}
			if _, err := p.Poll(msgs[:0]); err != nil {
				return 1
			}
		}
	}
}

// BenchmarkRoundTrip measures a 1-byte round trip to an echo process, both
// sides polling: the fabric's own latency, below any engine.
//
// Besides the mean (ns/op, which a loaded machine makes the time slices of
// the two processes) each reports median-ns: the median of the round trips,
// timed ten at a time.
func BenchmarkRoundTrip(b *testing.B) { roundTrip(b, "echo", nil) }

// BenchmarkRoundTripHeaded is BenchmarkRoundTrip with the engine's 96-byte
// header before the byte: a record of three cache lines' span, as the
// engine's 1 B messages make.
func BenchmarkRoundTripHeaded(b *testing.B) { roundTrip(b, "echo", make([]byte, 96)) }

// BenchmarkRoundTripTaken is BenchmarkRoundTripHeaded as the engine's
// reliable path makes a ping-pong of blocking sends: each side hands the
// room of what it read back (Handled) before it answers, and a sender looks
// whether its datagram was taken (Taken) until it was, polling meanwhile.
// Beside BenchmarkRoundTripHeaded, the cost of the consumer's head, a line
// written by one process and read by the other for every datagram.
func BenchmarkRoundTripTaken(b *testing.B) { roundTrip(b, "echotaken", make([]byte, 96)) }

func roundTrip(b *testing.B, role string, head []byte) {
	dir := testDir(b)
	p := listen(b, dir, "a", Config{})
	_, ep := spawnB(b, role, "PCOR_SHM_TEST_DIR="+dir, "PCOR_SHM_TEST_NAME=e", "PCOR_SHM_TEST_TO="+p.LocalEndpoint().String())
	to, err := p.ParseEndpoint(ep)
	if err != nil {
		b.Fatal(err)
	}
	taken := role == "echotaken"
	msgs := make([][]byte, 1)
	one := []fabric.Datagram{{Head: head, Body: []byte{1}, To: to}}
	rt := func() {
		if _, err := p.Send(one); err != nil {
			b.Fatal(err)
		}
		for done, got := !taken, false; !done || !got; {
			if !done {
				if done, err = p.Taken(to); err != nil {
					b.Fatal(err)
				}
			}
			if !got {
				n, err := p.Poll(msgs)
				if err != nil {
					b.Fatal(err)
				}
				got = n == 1
			}
		}
		if taken {
			p.Handled()
		}
	}
	for i := 0; i < 1000; i++ {
		rt()
	}
	const group = 10
	times := make([]float64, 0, b.N/group+1)
	b.ResetTimer()
	for i := 0; i < b.N; i += group {
		t0 := time.Now()
		for j := 0; j < group; j++ {
			rt()
		}
		times = append(times, float64(time.Since(t0).Nanoseconds())/group)
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(times[len(times)/2], "median-ns")
}

// BenchmarkStream measures one-way throughput of 64 KB datagrams to a
// receiving goroutine, beside BenchmarkMemmove of the same bytes.
func BenchmarkStream(b *testing.B) {
	dir := testDir(b)
	a, r := listen(b, dir, "a", Config{}), listen(b, dir, "r", Config{})
	body := make([]byte, DefaultMaxDatagram)
	b.SetBytes(int64(len(body)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		msgs := make([][]byte, r.BatchSize())
		for got := 0; got < b.N; {
			n, err := r.Receive(msgs)
			if err != nil {
				return
			}
			got += n
		}
	}()
	dg := []fabric.Datagram{{Body: body, To: r.LocalEndpoint()}}
	for i := 0; i < b.N; i++ {
		if _, err := a.Send(dg); err != nil {
			b.Fatal(err)
		}
	}
	<-done
}

func BenchmarkMemmove(b *testing.B) {
	src, dst := make([]byte, DefaultMaxDatagram), make([]byte, DefaultMaxDatagram)
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		copy(dst, src)
	}
}

// BenchmarkPollEmpty measures a Poll that finds nothing, with one sender
// attached: what a polling receiver pays per look at its rings.
func BenchmarkPollEmpty(b *testing.B) {
	dir := testDir(b)
	a, r := listen(b, dir, "a", Config{}), listen(b, dir, "r", Config{})
	if _, err := a.Send([]fabric.Datagram{{Body: []byte{1}, To: r.LocalEndpoint()}}); err != nil {
		b.Fatal(err)
	}
	msgs := make([][]byte, r.BatchSize())
	recvN(b, r, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, err := r.Poll(msgs); n != 0 || err != nil {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkSendPoll measures one datagram of 1 byte sent and polled by
// the same goroutine: the ring's own cost per message, both sides.
func BenchmarkSendPoll(b *testing.B) {
	dir := testDir(b)
	a, r := listen(b, dir, "a", Config{}), listen(b, dir, "r", Config{})
	dg := []fabric.Datagram{{Body: []byte{1}, To: r.LocalEndpoint()}}
	msgs := make([][]byte, r.BatchSize())
	for i := 0; i < b.N; i++ {
		if _, err := a.Send(dg); err != nil {
			b.Fatal(err)
		}
		if n, err := r.Poll(msgs); n != 1 || err != nil {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkLegCalls measures the fabric calls of one leg of a blocking
// round trip through the engine, in one goroutine: Send, Taken (not yet),
// Poll, Handled, Taken (taken). Count its instructions with callgrind (a
// figure load does not change).
func BenchmarkLegCalls(b *testing.B) {
	dir := testDir(b)
	a, r := listen(b, dir, "a", Config{}), listen(b, dir, "r", Config{})
	to := r.LocalEndpoint()
	dg := []fabric.Datagram{{Body: []byte{1}, To: to}}
	msgs := make([][]byte, r.BatchSize())
	for i := 0; i < b.N; i++ {
		if _, err := a.Send(dg); err != nil {
			b.Fatal(err)
		}
		if ok, err := a.Taken(to); ok || err != nil {
			b.Fatal(ok, err)
		}
		if n, err := r.Poll(msgs); n != 1 || err != nil {
			b.Fatal(n, err)
		}
		r.Handled()
		if ok, err := a.Taken(to); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
