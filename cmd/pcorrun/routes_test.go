package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/pcor"
)

// routesHelper joins as a pcor node whose ports chain the processes on
// loopback: rank r is on networks n<r> and n<r+1>, so rank 0 reaches rank
// 2 only through rank 1. Once it has a route to every other rank it
// prints its own table, line by line, and leaves once every rank has.
func routesHelper() int {
	rank, _ := strconv.Atoi(os.Getenv("PCOR_RANK"))
	size, _ := strconv.Atoi(os.Getenv("PCOR_SIZE"))
	ls := []pcor.Listen{{Addr: "127.0.0.1:0", Network: fmt.Sprintf("n%d", rank)}}
	if rank+1 < size {
		ls = append(ls, pcor.Listen{Addr: "127.0.0.1:0", Network: fmt.Sprintf("n%d", rank+1)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	n, err := pcor.FromEnv(ctx, pcor.JoinConfig{Listen: ls})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer n.Close()
	for {
		if len(n.Routes().Destinations()) == size-1 {
			break
		}
		select {
		case <-ctx.Done():
			fmt.Println("routes never complete")
			return 1
		case <-time.After(10 * time.Millisecond):
		}
	}
	var b bytes.Buffer
	n.Routes().Format(&b)
	fmt.Print(b.String())
	// Leave as soon as every rank has printed its table (a barrier through
	// rank 0), well within the directory's settle time, as a short program
	// does.
	t := n.NewThread()
	if rank == 0 {
		for i := 1; i < size; i++ {
			if _, err := t.Recv(ctx, pcor.Any, 1); err != nil {
				fmt.Println(err)
				return 1
			}
		}
		for i := size - 1; i > 0; i-- { // the farthest first: the nearer are its gateways
			// A rank that received its answer may leave before the
			// acknowledgement is seen: the send then fails with ErrPeerDown.
			if err := t.Send(ctx, pcor.Addr{Proc: pcor.ProcID(i)}, 2, nil); err != nil && !errors.Is(err, pcor.ErrPeerDown) {
				fmt.Println(err)
				return 1
			}
		}
	} else {
		if err := t.Send(ctx, pcor.Addr{Proc: 0}, 1, nil); err != nil {
			fmt.Println(err)
			return 1
		}
		if _, err := t.Recv(ctx, pcor.Addr{Proc: 0}, 2); err != nil {
			fmt.Println(err)
			return 1
		}
	}
	return 0
}

// pcorrun --routes prints each process's table, and it is the table that
// process applies.
func TestRoutesFlag(t *testing.T) {
	code, out, errs := runHelper(t, "routes", "-n", "3", "--routes")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	t.Logf("output:\n%s", out)
	for r := 0; r < 3; r++ {
		printed := section(out, fmt.Sprintf("pcorrun: routes of process %d", r))
		if printed == nil {
			t.Fatalf("no table of process %d", r)
		}
		var own []string
		for _, l := range strings.Split(out, "\n") {
			if p := fmt.Sprintf("[%d] ", r); strings.HasPrefix(l, p) {
				own = append(own, strings.TrimPrefix(l, p))
			}
		}
		if strings.Join(own, "\n") != strings.Join(printed, "\n") {
			t.Fatalf("process %d applies\n%s\npcorrun printed\n%s", r, strings.Join(own, "\n"), strings.Join(printed, "\n"))
		}
	}
	// Process 0 reaches 2 through 1.
	for _, l := range section(out, "pcorrun: routes of process 0") {
		if f := strings.Fields(l); f[0] == "2" && (f[5] != "1" || f[len(f)-1] != "0>1>2") {
			t.Fatalf("route from 0 to 2: %q", l)
		}
	}
}

// section returns the lines after the last header line starting with
// header, up to the next header or a line of another origin.
func section(out, header string) []string {
	lines := strings.Split(out, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, header) {
			start = i + 1
		}
	}
	if start < 0 {
		return nil
	}
	var sec []string
	for _, l := range lines[start:] {
		if l == "" || strings.HasPrefix(l, "pcorrun:") || strings.HasPrefix(l, "[") {
			break
		}
		sec = append(sec, l)
	}
	return sec
}

// pcorrun --directory-only --routes prints the tables when a member joins
// and again on SIGUSR1, for an application it did not start.
func TestRoutesOnSignal(t *testing.T) {
	cmd, sc := startPcorrun(t, "", "--directory-only", "--routes", "--jobkey", "abc")
	env := map[string]string{}
	for len(env) < 2 && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		env[k] = v
	}
	lines := make(chan string, 64)
	go func() {
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(want string) {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("output ended before %q", want)
				}
				if strings.HasPrefix(strings.Join(strings.Fields(l), " "), want) {
					return
				}
			case <-timeout:
				t.Fatalf("no line %q", want)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	port := func(addr string) []directory.PortInfo {
		return []directory.PortInfo{{Fabric: "udp", Network: "lan", Addr: addr}}
	}
	c0, err := directory.Join(ctx, env["PCOR_COORD"], directory.JoinRequest{JobKey: 0xabc, Proc: 0, Host: "h0", Ports: port("10.0.0.1:1")})
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	expect("pcorrun: routes of process 0 on h0:")
	c1, err := directory.Join(ctx, env["PCOR_COORD"], directory.JoinRequest{JobKey: 0xabc, Proc: 1, Host: "h1", Ports: port("10.0.0.2:1")})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	expect("pcorrun: routes of process 0 on h0:")
	expect("1 0- 0 udp lan 1 10.0.0.2:1 1")
	cmd.Process.Signal(syscall.SIGUSR1)
	expect("pcorrun: routes of process 0 on h0:")
	expect("pcorrun: routes of process 1 on h1:")
	expect("0 0- 0 udp lan 0 10.0.0.1:1 1")
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pcorrun: %v", err)
	}
}
