package hws

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// A real directory on loopback: four processes in two networks join; the
// master of the first group closes its session; the tracker of another
// process sees the group elect its next process as master within seconds.
func TestTrackerMasterFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const key = 0x4853
	srv, err := directory.NewServer(ln, directory.ServerConfig{JobKey: key, Size: 4, HeartbeatTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	nets := []string{"lanA", "lanA", "lanB", "lanB"}
	clients := make([]*directory.Client, 4)
	for i := range clients {
		c, err := directory.Join(ctx, ln.Addr().String(), directory.JoinRequest{
			JobKey: key, Proc: i, Host: fmt.Sprintf("h%d", i),
			Ports: []directory.PortInfo{udp(nets[i], fmt.Sprintf("10.0.%d.%d:1", i/2, i))},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	watcher := clients[3]
	if err := watcher.Wait(ctx, 4); err != nil {
		t.Fatal(err)
	}
	changes := make(chan string, 16)
	tr := NewTracker(TrackerConfig{OnChange: func(old, cur *Groups) {
		changes <- fmt.Sprintf("%s masters %v", cur, cur.Masters())
	}})
	tr.Reset(watcher.Members())
	if got := <-changes; got != "0-1;2-3 masters [0 2]" {
		t.Fatalf("initial groups: %s", got)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range watcher.Events() {
			tr.Update(ev)
		}
	}()

	clients[0].Close() // the first group's master dies
	select {
	case got := <-changes:
		if got != "1;2-3 masters [1 2]" {
			t.Fatalf("after the master died: %s", got)
		}
	case <-ctx.Done():
		t.Fatal("no new master elected")
	}
	if !tr.Groups().IsMaster(1) || tr.Groups().IsMaster(0) {
		t.Fatalf("tracker groups %s", tr.Groups())
	}
	clients[2].Close() // and the second group's
	select {
	case got := <-changes:
		if got != "1;3 masters [1 3]" {
			t.Fatalf("after the second master died: %s", got)
		}
	case <-ctx.Done():
		t.Fatal("no new master elected")
	}
	watcher.Close()
	<-done
}
