package main

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// The route watch prints while members join and leave: the directory
// calls it with its own lock held, and printing asks the directory for
// its members, so neither may wait for the other while holding its lock.
func TestRouteWatchDuringChanges(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	watch := newRouteWatch(&lockedWriter{w: io.Discard}, 1)
	const key = 0x5eed
	srv, err := directory.NewServer(ln, directory.ServerConfig{JobKey: key, OnEvent: watch.changed})
	if err != nil {
		t.Fatal(err)
	}
	watch.start(srv)

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // prints as fast as it can, as SIGUSR1 and the settle timer do
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				watch.print(true)
			}
		}
	}()
	go func() { // members come and go
		defer wg.Done()
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for i := 0; i < 100 && ctx.Err() == nil; i++ {
			c, err := directory.Join(ctx, ln.Addr().String(), directory.JoinRequest{JobKey: key, Proc: directory.AnyProc,
				Ports: []directory.PortInfo{{Fabric: "udp", Network: "lo", Addr: "127.0.0.1:1"}}})
			if err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			c.Leave(ctx)
			c.Close()
		}
	}()
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		t.Fatal("the route watch and the directory wait for each other (deadlock)")
	}
	watch.stop()
	srv.Close()
}
