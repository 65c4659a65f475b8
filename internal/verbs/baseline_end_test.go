package verbs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestBaselineInfoRoundTrip(t *testing.T) {
	var g GID
	copy(g[:], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 2, 15})
	in := BaselineInfo{GID: g, QPN: 0x11, PSN: 0xabcdef, Addr: 0x7f0012345000, RKey: 0x1234, Len: 65536}
	out, err := ParseBaselineInfo(in.String())
	if err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Fatalf("parsed %+v from %q, want %+v", out, in.String(), in)
	}
	for _, bad := range []string{"", "x", "::1/1/1/1/1", "nogid/1/1/1/1/1", "::1/1000000/1/1/1/1", "::1/1/1/zz/1/1", "::1/1/1/1/1/-1"} {
		if _, err := ParseBaselineInfo(bad); !errors.Is(err, ErrBadBaselineInfo) {
			t.Errorf("ParseBaselineInfo(%q) = %v, want ErrBadBaselineInfo", bad, err)
		}
	}
}

func TestNewBaselineEndBadArgs(t *testing.T) {
	for _, a := range [][2]int{{0, 1}, {MaxBaselineBuf + 1, 1}, {64, 0}, {64, 5000}} {
		if e, err := NewBaselineEnd(BaselineConfig{}, a[0], a[1]); err == nil {
			e.Close()
			t.Errorf("NewBaselineEnd(%d, %d) succeeded", a[0], a[1])
		}
	}
}

// connectedEnds returns two baseline ends connected to each other.
func connectedEnds(t *testing.T, bufSize, depth int) (a, b *BaselineEnd) {
	t.Helper()
	a, err := NewBaselineEnd(BaselineConfig{}, bufSize, depth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = NewBaselineEnd(BaselineConfig{}, bufSize, depth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := a.Connect(b.Info()); err != nil {
		t.Fatal(err)
	}
	if err := b.Connect(a.Info()); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestBaselineEndPingPongAndWrite(t *testing.T) {
	requireDevice(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := connectedEnds(t, 8<<10, 8)

	echoCtx, stopEcho := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var echoErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		echoErr = b.Echo(echoCtx)
	}()
	for _, size := range []int{0, 2, 8 << 10} {
		rtts, err := a.PingPong(ctx, size, 2, 10)
		if err != nil {
			t.Fatalf("ping-pong %d B: %v", size, err)
		}
		if len(rtts) != 10 || rtts[0] <= 0 {
			t.Fatalf("ping-pong %d B: %v", size, rtts)
		}
	}
	if _, err := a.PingPong(ctx, 8<<10+1, 0, 1); err == nil {
		t.Fatal("a message larger than the buffers was accepted")
	}
	stopEcho()
	wg.Wait()
	if echoErr != nil {
		t.Fatalf("echo: %v", echoErr)
	}

	// The write lands in b's receive half.
	for i := range a.sendBuf {
		a.sendBuf[i] = byte(i*7 + 1)
	}
	r, err := a.WriteStream(ctx, 4<<10, 4, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Iters < 1 || r.MBps() <= 0 {
		t.Fatalf("implausible write stream %v", r)
	}
	for i := range 4 << 10 {
		if b.recvBuf[i] != a.sendBuf[i] {
			t.Fatalf("byte %d of the written region is %d, want %d", i, b.recvBuf[i], a.sendBuf[i])
		}
	}
	t.Log(r)
}
