package pcor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

// TestSendInvalid: a send to a wildcard address, or with a negative tag
// (AnyTag among them), fails with ErrInvalid, blocking or not, and
// nothing reaches the destination.
func TestSendInvalid(t *testing.T) {
	a, c := udpPair(t, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cases := []struct {
		dst pcor.Addr
		tag pcor.Tag
	}{
		{pcor.Any, 1},
		{pcor.Addr{Proc: pcor.AnyProc, Thread: tc.Addr().Thread}, 1},
		{pcor.Addr{Proc: c.Proc(), Thread: pcor.AnyThread}, 1},
		{pcor.Addr{Proc: a.Proc(), Thread: pcor.AnyThread}, 1}, // this process
		{tc.Addr(), pcor.AnyTag},
		{tc.Addr(), -5},
		{ta.Addr(), -5}, // a thread of this process
	}
	for _, k := range cases {
		if err := ta.Send(ctx, k.dst, k.tag, []byte("x")); !errors.Is(err, pcor.ErrInvalid) {
			t.Errorf("Send to %v tag %d: %v, want ErrInvalid", k.dst, k.tag, err)
		}
		if err := ta.Ssend(ctx, k.dst, k.tag, []byte("x")); !errors.Is(err, pcor.ErrInvalid) {
			t.Errorf("Ssend to %v tag %d: %v, want ErrInvalid", k.dst, k.tag, err)
		}
		r := ta.Isend(k.dst, k.tag, []byte("x"))
		if done, err := r.Test(); !done || !errors.Is(err, pcor.ErrInvalid) {
			t.Errorf("Isend to %v tag %d: Test %v %v, want done with ErrInvalid", k.dst, k.tag, done, err)
		}
		if err := r.Wait(ctx); !errors.Is(err, pcor.ErrInvalid) {
			t.Errorf("Isend to %v tag %d: Wait %v, want ErrInvalid", k.dst, k.tag, err)
		}
		select {
		case <-r.Done():
		default:
			t.Errorf("Isend to %v tag %d: Done not closed", k.dst, k.tag)
		}
		r.Cancel()
	}
	// Messages between a pair are not overtaken: had an invalid send gone
	// out, the receive with wildcards would take it before this one.
	if err := ta.Send(ctx, tc.Addr(), 7, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if m, err := tc.Recv(ctx, pcor.Any, pcor.AnyTag); err != nil || m.Tag != 7 || string(m.Data) != "ok" {
		t.Fatalf("received tag %d %q, %v; want tag 7 \"ok\"", m.Tag, m.Data, err)
	}
	if _, ok := ta.Iprobe(pcor.Any, pcor.AnyTag); ok {
		t.Fatal("a message reached the sender's own thread")
	}
}

// TestRecvInvalidTag: a receive's tag is 0 or more, or AnyTag; another
// negative one fails with ErrInvalid instead of waiting for a message
// that cannot come.
func TestRecvInvalidTag(t *testing.T) {
	a, c := udpPair(t, pcor.Blocking)
	ta, tc := a.NewThread(), c.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := tc.Recv(ctx, ta.Addr(), -5); !errors.Is(err, pcor.ErrInvalid) {
		t.Errorf("Recv tag -5: %v, want ErrInvalid", err)
	}
	if _, err := tc.RecvInto(ctx, pcor.Any, -2, make([]byte, 8)); !errors.Is(err, pcor.ErrInvalid) {
		t.Errorf("RecvInto tag -2: %v, want ErrInvalid", err)
	}
	if _, err := tc.Probe(ctx, pcor.Any, -5); !errors.Is(err, pcor.ErrInvalid) {
		t.Errorf("Probe tag -5: %v, want ErrInvalid", err)
	}
	r := tc.Irecv(pcor.Any, -5, nil)
	if err := r.Wait(ctx); !errors.Is(err, pcor.ErrInvalid) {
		t.Errorf("Irecv tag -5: %v, want ErrInvalid", err)
	}
	if m := r.Message(); m.Data != nil || m.Tag != 0 {
		t.Errorf("Irecv tag -5: message %+v", m)
	}
	// A refused request given back to IrecvReuse is not reused: a new
	// receive is posted, which works.
	r2 := tc.IrecvReuse(r, ta.Addr(), 3, nil)
	if err := ta.Send(ctx, tc.Addr(), 3, []byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := r2.Wait(ctx); err != nil || string(r2.Message().Data) != "y" {
		t.Fatalf("IrecvReuse after a refused receive: %q %v", r2.Message().Data, err)
	}
	if r3 := tc.IrecvReuse(r2, ta.Addr(), -3, nil); !errors.Is(r3.Wait(ctx), pcor.ErrInvalid) {
		t.Errorf("IrecvReuse tag -3: %v, want ErrInvalid", r3.Wait(ctx))
	}
}

// TestThreadAnyThread: AnyThread is a wildcard, not an endpoint: the
// endpoint Thread returns for it refuses every operation with ErrInvalid,
// and the ids NewThread hands out are unchanged.
func TestThreadAnyThread(t *testing.T) {
	a, c := udpPair(t, pcor.Blocking)
	tc := c.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	bad := a.Thread(pcor.AnyThread)
	if err := bad.Send(ctx, tc.Addr(), 1, nil); !errors.Is(err, pcor.ErrInvalid) {
		t.Errorf("Send: %v, want ErrInvalid", err)
	}
	if err := bad.Isend(tc.Addr(), 1, nil).Wait(ctx); !errors.Is(err, pcor.ErrInvalid) {
		t.Errorf("Isend: %v, want ErrInvalid", err)
	}
	if _, err := bad.Recv(ctx, pcor.Any, pcor.AnyTag); !errors.Is(err, pcor.ErrInvalid) {
		t.Errorf("Recv: %v, want ErrInvalid", err)
	}
	if err := bad.Irecv(pcor.Any, pcor.AnyTag, nil).Wait(ctx); !errors.Is(err, pcor.ErrInvalid) {
		t.Errorf("Irecv: %v, want ErrInvalid", err)
	}
	if _, err := bad.Probe(ctx, pcor.Any, pcor.AnyTag); !errors.Is(err, pcor.ErrInvalid) {
		t.Errorf("Probe: %v, want ErrInvalid", err)
	}
	if _, ok := bad.Iprobe(pcor.Any, pcor.AnyTag); ok {
		t.Error("Iprobe found a message")
	}
	if th := a.NewThread(); th.Addr().Thread != 0 {
		t.Errorf("NewThread after Thread(AnyThread): thread %d, want 0", th.Addr().Thread)
	}
}

// TestAllocNegative: a negative size is refused with nil, not a panic.
func TestAllocNegative(t *testing.T) {
	a, _ := udpPair(t, pcor.Blocking)
	if b := a.Alloc(-1); b != nil {
		t.Fatalf("Alloc(-1) = %d bytes, want nil", len(b))
	}
	if b := a.Alloc(0); len(b) != 0 {
		t.Fatalf("Alloc(0) = %d bytes", len(b))
	}
}

// TestConfigNegative: NewNode refuses a negative size, count or time
// with ErrInvalid, naming the field (0 is the default).
func TestConfigNegative(t *testing.T) {
	for name, cfg := range map[string]pcor.Config{
		"MaxMessage":         {MaxMessage: -1},
		"RecvBudget":         {RecvBudget: -1},
		"MCBs":               {MCBs: -1},
		"Buckets":            {Buckets: -1},
		"UnreachableTimeout": {UnreachableTimeout: -time.Second},
		"Window":             {Window: -1},
	} {
		cfg.JobKey = jobKey
		n, err := pcor.NewNode(cfg)
		if n != nil {
			n.Close()
		}
		if !errors.Is(err, pcor.ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s negative: %v, want ErrInvalid naming %s", name, err, name)
		}
	}
}

// TestSendUnknownProcess: a send to a process this node has no route to
// (not joined yet, never added as a peer) fails at once, blocking or not,
// with an *UnreachableError naming it whose text says why, not with
// ErrNoPath (kept for members whose paths were lost).
func TestSendUnknownProcess(t *testing.T) {
	n, err := pcor.NewNode(pcor.Config{JobKey: 0x1234})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	th := n.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dst := pcor.Addr{Proc: 5, Thread: 0}
	errs := map[string]error{
		"Send":           th.Send(ctx, dst, 1, []byte("x")),
		"Isend":          th.Isend(dst, 1, []byte("x")).Wait(ctx),
		"Isend of 1 MiB": th.Isend(dst, 1, make([]byte, 1<<20)).Wait(ctx),
	}
	for what, err := range errs {
		var ue *pcor.UnreachableError
		if !errors.Is(err, pcor.ErrUnreachable) || !errors.As(err, &ue) || ue.Proc != 5 || errors.Is(err, pcor.ErrNoPath) {
			t.Errorf("%s to a process never added: %v, want an UnreachableError for process 5 without ErrNoPath", what, err)
			continue
		}
		if !strings.Contains(err.Error(), "not joined yet") {
			t.Errorf("%s to a process never added: %q does not say the process may not have joined yet", what, err)
		}
	}
}
