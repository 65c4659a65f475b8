package engine

import (
	"context"
	"testing"
	"time"
)

// A request that completed before anyone waited on it (no signal sent)
// still delivers on Done, and Wait returns its outcome, whether the wait
// spins or blocks at once.
func TestDoneAfterUnwaitedCompletion(t *testing.T) {
	e, err := New(Config{Proc: 0, JobKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, b := e.Endpoint(1), e.Endpoint(2)
	for _, spinMax := range []int32{0, 1} {
		e.spinMax = spinMax
		for i := range 100 {
			r := b.Irecv(0, 1, 7, make([]byte, 8))
			if err := a.Send(context.Background(), 0, 2, 7, []byte("hello")); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				select {
				case <-r.Done():
				case <-time.After(10 * time.Second):
					t.Fatalf("spinMax %d: Done of a receive completed before anyone waited never delivered", spinMax)
				}
			}
			if err := r.Wait(context.Background()); err != nil || string(r.Data()) != "hello" {
				t.Fatalf("Wait: %q %v", r.Data(), err)
			}
		}
	}
}

// A receive waited on before its message comes is woken by the send, from
// another goroutine, with and without the spin, and while spins have been
// failing (only some waits spin). Spins that keep failing (no answer
// comes) make most waits skip theirs.
func TestWaitWokenBySend(t *testing.T) {
	e, err := New(Config{Proc: 0, JobKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, b := e.Endpoint(1), e.Endpoint(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, spinMax := range []int32{0, 1, -1} {
		e.spinMax = spinMax
		if spinMax < 0 {
			e.spinMax = 1
			e.spinScore.Store(-spinScoreMax)
		}
		errs := make(chan error, 1)
		go func() {
			for i := range 1000 {
				if err := a.Send(ctx, 0, 2, 7, []byte{byte(i)}); err != nil {
					errs <- err
					return
				}
				if _, err := a.Recv(ctx, 0, 2, 8, make([]byte, 1)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
		buf := make([]byte, 1)
		for i := range 1000 {
			r, err := b.Recv(ctx, 0, 1, 7, buf)
			if err != nil || r.Data()[0] != byte(i) {
				t.Fatalf("spinMax %d: message %d: %v", spinMax, i, err)
			}
			if err := b.Send(ctx, 0, 1, 8, buf); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestSpinBacksOff(t *testing.T) {
	e, err := New(Config{Proc: 0, JobKey: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.spinMax = 1
	b := e.Endpoint(2)
	for range 4 * spinScoreMax {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Microsecond)
		if _, err := b.Recv(ctx, 0, 1, 7, nil); err == nil {
			t.Fatal("a receive of a message never sent completed")
		}
		cancel()
	}
	if s := e.spinScore.Load(); s >= 0 {
		t.Fatalf("spin score %d after %d failed waits", s, 4*spinScoreMax)
	}
	if n := e.spinTries.Load(); n == 0 {
		t.Fatal("no wait skipped its spin after spins kept failing")
	}
}
