package raw

import (
	"context"
	"time"
)

// ChanPingPong times iters round trips of size bytes between two
// goroutines over unbuffered channels, after warmup untimed ones, and
// returns each in microseconds. Each side copies what it receives into a
// buffer of its own, as a message between threads is copied once (pcor
// copies into the receive buffer): passing the slice alone would time
// nothing but the hand-over. It is the baseline for threads of one
// process.
func ChanPingPong(ctx context.Context, size, warmup, iters int) ([]float64, error) {
	ping := make(chan []byte)
	pong := make(chan []byte)
	done := make(chan struct{})
	go func() {
		defer close(done)
		own := make([]byte, size)
		for b := range ping {
			copy(own, b)
			pong <- own
		}
	}()
	defer func() { close(ping); <-done }()
	buf := make([]byte, size)
	in := make([]byte, size)
	out := make([]float64, 0, iters)
	for i := 0; i < warmup+iters; i++ {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		t0 := time.Now()
		ping <- buf
		copy(in, <-pong)
		if i >= warmup {
			out = append(out, float64(time.Since(t0).Nanoseconds())/1e3)
		}
	}
	return out, nil
}

// ChanStream sends size-byte messages through a channel holding up to
// window of them for dur; the receiving goroutine copies each into its own
// buffer (the one copy a message between threads needs). The time runs
// until the receiver has copied the last one.
func ChanStream(ctx context.Context, size, window int, dur time.Duration) (Sample, error) {
	ch := make(chan []byte, max(window, 1))
	done := make(chan int64)
	go func() {
		dst := make([]byte, size)
		var n int64
		for b := range ch {
			copy(dst, b)
			n++
		}
		done <- n
	}()
	src := make([]byte, size)
	start := time.Now()
	for i := 0; ; i++ {
		if i%64 == 0 && (time.Since(start) >= dur || ctx.Err() != nil) {
			break
		}
		ch <- src
	}
	close(ch)
	n := <-done
	el := time.Since(start)
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	return Sample{Bytes: n * int64(size), Messages: n, Elapsed: el}, nil
}
