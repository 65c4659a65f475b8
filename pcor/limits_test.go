package pcor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/pcor"
)

// A message the sender accepts but the destination's MaxMessage does not
// is refused on the wire: Send and Wait fail at once with ErrTooLarge
// naming the destination's limit, and the stream carries on.
func TestTooLargeForDestination(t *testing.T) {
	const limit = 1 << 20
	a, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey, MaxMessage: limit,
		Peers: []pcor.Peer{{Proc: 0, Addr: a.Endpoints()[0].Addr}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := a.AddPeer(pcor.Peer{Proc: 1, Addr: c.Endpoints()[0].Addr}); err != nil {
		t.Fatal(err)
	}
	ta, tc := a.NewThread(), c.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ta.Send(ctx, tc.Addr(), 2, []byte("warm")); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Recv(ctx, ta.Addr(), 2); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{limit + 1, 8 << 20, 2 << 20} {
		start := time.Now()
		err := ta.Send(ctx, tc.Addr(), 1, make([]byte, size))
		if !errors.Is(err, pcor.ErrTooLarge) || !strings.Contains(err.Error(), "1048576") {
			t.Fatalf("send of %d bytes: %v, want ErrTooLarge naming the limit %d", size, err, limit)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the refusal took %v", d)
		}
		t.Logf("%d bytes: %v after %v", size, err, time.Since(start).Round(time.Microsecond))
	}
	if err := ta.Isend(tc.Addr(), 1, make([]byte, 3<<20)).Wait(ctx); !errors.Is(err, pcor.ErrTooLarge) {
		t.Fatalf("isend: %v", err)
	}
	// The stream carries on: a message at the limit arrives, intact and
	// in order after the refused ones, which never arrive.
	data := randomBytes(limit, 9)
	if err := ta.Send(ctx, tc.Addr(), 1, data); err != nil {
		t.Fatal(err)
	}
	m, err := tc.Recv(ctx, ta.Addr(), 1)
	if err != nil || string(m.Data) != string(data) {
		t.Fatalf("message at the limit: %d bytes, %v", len(m.Data), err)
	}
	if _, ok := tc.Iprobe(pcor.Any, pcor.AnyTag); ok {
		t.Fatal("a refused message arrived")
	}
	if c.Stats()[0].Drops["too-large"] == 0 {
		t.Error("the destination counted no too-large drop")
	}
}

// A node needs a job key: NewNode and Join refuse 0 with ErrNoJobKey,
// whose text says what to do.
func TestJobKeyZeroRefused(t *testing.T) {
	_, err := pcor.NewNode(pcor.Config{Proc: 0})
	if !errors.Is(err, pcor.ErrNoJobKey) || !strings.Contains(err.Error(), "JobKey") {
		t.Fatalf("NewNode without a job key: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := pcor.Join(ctx, pcor.JoinConfig{Coord: "127.0.0.1:1"}); !errors.Is(err, pcor.ErrNoJobKey) {
		t.Fatalf("Join without a job key: %v", err)
	}
}

// FromEnv in an environment no launcher set (no PCOR_JOBKEY, no Slurm or
// MPI job) fails with ErrNoJobKey, as NewNode and Join do, and says how
// to start the program. The check runs in a child with an empty
// environment, so that the test's own (a CI under Slurm) cannot hide it.
func TestFromEnvWithoutLauncher(t *testing.T) {
	if os.Getenv("PCOR_TEST_FROMENV_CHILD") == "1" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := pcor.FromEnv(ctx, pcor.JoinConfig{})
		if err == nil {
			n.Close()
		}
		if !errors.Is(err, pcor.ErrNoJobKey) || !errors.Is(err, directory.ErrNoJobKey) || !strings.Contains(err.Error(), "pcorrun") {
			fmt.Printf("FromEnv without a launcher: %v, want ErrNoJobKey naming pcorrun\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFromEnvWithoutLauncher$")
	cmd.Env = []string{"PCOR_TEST_FROMENV_CHILD=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
