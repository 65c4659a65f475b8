// Command pingpong runs two pcor processes on this machine that bounce
// messages of growing size between two threads over UDP on loopback, and
// prints the round-trip time of each size.
//
//	go run ./examples/pingpong [-n rounds]
//
// The first process starts the second (the same binary) and tells it its
// address; each prints what it does. It is not a program for pcorrun, which
// it refuses: examples/ring is.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/pcor-go/pcor/pcor"
)

const jobKey = 0x70696e67706f6e67

func main() {
	rounds := flag.Int("n", 200, "round trips per size")
	flag.Parse()
	log.SetFlags(0)
	if peer := os.Getenv("PINGPONG_PEER"); peer != "" {
		log.SetPrefix("[1] ")
		if err := pong(peer); err != nil {
			log.Fatal(err)
		}
		return
	}
	log.SetPrefix("[0] ")
	if os.Getenv("PCOR_RANK") != "" {
		// Under pcorrun every rank would start a pair of its own.
		log.Fatal("pingpong starts its own second process: run it alone (go run ./examples/pingpong), not under pcorrun")
	}
	if err := ping(*rounds); err != nil {
		log.Fatal(err)
	}
}

// pong is process 1: it echoes every message until one with tag 0.
func pong(peer string) error {
	n, err := pcor.NewNode(pcor.Config{Proc: 1, JobKey: jobKey, Peers: []pcor.Peer{{Proc: 0, Addr: peer}}})
	if err != nil {
		return err
	}
	defer n.Close()
	fmt.Println(n.Endpoints()[0].Addr)
	t := n.NewThread()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for {
		m, err := t.Recv(ctx, pcor.Any, pcor.AnyTag)
		if err != nil {
			return err
		}
		if m.Tag == 0 {
			return nil
		}
		if err := t.Send(ctx, m.Src, m.Tag, m.Data); err != nil {
			return err
		}
	}
}

// ping is process 0: it starts process 1 and measures round trips.
func ping(rounds int) error {
	n, err := pcor.NewNode(pcor.Config{Proc: 0, JobKey: jobKey})
	if err != nil {
		return err
	}
	defer n.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "PINGPONG_PEER="+n.Endpoints()[0].Addr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("peer did not start: %w", err)
	}
	if err := n.AddPeer(pcor.Peer{Proc: 1, Addr: strings.TrimSpace(addr)}); err != nil {
		return err
	}
	log.Printf("process 0 at %s, process 1 at %s", n.Endpoints()[0].Addr, strings.TrimSpace(addr))
	t := n.NewThread()
	peer := pcor.Addr{Proc: 1, Thread: 0}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fmt.Printf("%10s %12s %12s %12s\n", "bytes", "median µs", "p99 µs", "MB/s")
	for size := 1; size <= 4<<20; size *= 4 {
		data := bytes.Repeat([]byte{byte(size)}, size)
		buf := n.Alloc(size)
		r := rounds
		if size >= 1<<20 {
			r = 10
		}
		times := make([]time.Duration, 0, r)
		for i := 0; i < r; i++ {
			start := time.Now()
			if err := t.Send(ctx, peer, 1, data); err != nil {
				return err
			}
			m, err := t.RecvInto(ctx, peer, 1, buf)
			if err != nil {
				return err
			}
			times = append(times, time.Since(start))
			if !bytes.Equal(m.Data, data) {
				return fmt.Errorf("%d bytes came back different", size)
			}
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		med, p99 := times[len(times)/2], times[len(times)*99/100]
		fmt.Printf("%10d %12.1f %12.1f %12.1f\n", size, us(med), us(p99), 2*float64(size)/med.Seconds()/1e6)
	}
	if err := t.Send(ctx, peer, 0, nil); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("process 1: %w", err)
	}
	st := n.Stats()[0]
	log.Printf("port %s: %d fragments sent, %d received, %d retransmitted, %d dropped",
		st.Endpoint, st.FragsSent, st.FragsRecv, st.Retransmits, st.DroppedTotal)
	return nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
