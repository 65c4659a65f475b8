package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// A daemon that leaves while the viewer goes on is reported down; daemons
// stopped with the viewer (Ctrl-C reaches every process at once, in any
// order) are not: a shutdown is no failure.
func TestShutdownNotReportedDown(t *testing.T) {
	set := halfPaperSet(t)
	a := newApp(t, 4)
	jctx, jcancel := context.WithTimeout(context.Background(), JoinTimeout)
	defer jcancel()
	var ds []*Process
	for r := 1; r <= 3; r++ {
		d, err := a.join(jctx, r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		ds = append(ds, d)
	}
	v, err := a.join(jctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	var mu sync.Mutex
	var log strings.Builder
	v.Logf = func(f string, args ...any) {
		mu.Lock()
		fmt.Fprintf(&log, f+"\n", args...)
		mu.Unlock()
	}
	logged := func() string {
		mu.Lock()
		defer mu.Unlock()
		return log.String()
	}
	vctx, stop := context.WithCancel(context.Background())
	defer stop()
	l, err := v.Viewer(vctx, set, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitDown := func(r int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			for _, d := range l.Daemons() {
				if int(d.Proc) == r && !d.Up {
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("daemon %d not marked down 30 s after it left", r)
	}

	// Daemon 1 leaves while the viewer goes on: a failure to report.
	ds[0].Close()
	waitDown(1)
	time.Sleep(shutdownGrace + 500*time.Millisecond)
	if !strings.Contains(logged(), "daemon 1 is down") {
		t.Errorf("daemon 1 left while the viewer went on, not reported:\n%s", logged())
	}

	// Daemon 2 leaves just before the viewer stops (its stop signal came
	// first), daemon 3 after: neither is a failure.
	ds[1].Close()
	waitDown(2)
	stop()
	ds[2].Close()
	waitDown(3)
	time.Sleep(shutdownGrace + 500*time.Millisecond)
	for _, r := range []int{2, 3} {
		if s := fmt.Sprintf("daemon %d is down", r); strings.Contains(logged(), s) {
			t.Errorf("daemon %d stopped with the viewer, reported down:\n%s", r, logged())
		}
	}
}
