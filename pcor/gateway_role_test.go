package pcor_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"errors"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/pcor"
	"github.com/pcor-go/pcor/routing"
)

// The routing tests start the test binary in network namespaces as a
// directory or as a joined node driven by commands on its standard input
// (one per line, answered by lines ending with one starting OK, ERR or
// END). The role is chosen here, before TestMain, by PCOR_RT_ROLE.
func init() {
	switch os.Getenv("PCOR_RT_ROLE") {
	case "":
		return
	case "dir":
		os.Exit(rtDirectory())
	case "node":
		os.Exit(rtNode(os.Stdin, os.Stdout))
	default:
		fmt.Fprintln(os.Stderr, "unknown PCOR_RT_ROLE")
		os.Exit(2)
	}
}

const rtJobKey = 0x70_7574_6573

// rtDirectory serves the directory on PCOR_RT_COORD until its standard
// input closes.
func rtDirectory() int {
	ln, err := net.Listen("tcp", os.Getenv("PCOR_RT_COORD"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := directory.NewServer(ln, directory.ServerConfig{JobKey: rtJobKey, Size: 3, HeartbeatTimeout: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Close()
	fmt.Println("READY")
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// parseCosts parses "20us/2.5e6,300us/1e9": latency/bandwidth per port.
func parseCosts(s string) ([]routing.LinkCost, error) {
	var cs []routing.LinkCost
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		l, b, ok := strings.Cut(part, "/")
		lat, err := time.ParseDuration(l)
		if err != nil || !ok {
			return nil, fmt.Errorf("cost %q", part)
		}
		bw, err := strconv.ParseFloat(b, 64)
		if err != nil {
			return nil, fmt.Errorf("cost %q", part)
		}
		cs = append(cs, routing.LinkCost{Latency: lat, Bandwidth: bw})
	}
	return cs, nil
}

// pendingSend is an Isend the controller asked for.
type pendingSend struct {
	dst   pcor.ProcID
	req   *pcor.Request
	start time.Time
}

// rtNode joins the directory at PCOR_RT_COORD as process PCOR_RT_RANK with
// the ports of PCOR_RT_LISTEN and the costs of PCOR_RT_COSTS, then runs the
// commands read from in.
func rtNode(in io.Reader, out io.Writer) int {
	ls, err := pcor.ParseListen(os.Getenv("PCOR_RT_LISTEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	costs, err := parseCosts(os.Getenv("PCOR_RT_COSTS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rank, _ := strconv.Atoi(os.Getenv("PCOR_RT_RANK"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := pcor.Join(ctx, pcor.JoinConfig{Coord: os.Getenv("PCOR_RT_COORD"), JobKey: rtJobKey, Rank: rank, Size: 3,
		Directory: directory.ServeNever, Listen: ls, Costs: costs,
		Node: pcor.Config{UnreachableTimeout: 30 * time.Second}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "join:", err)
		return 1
	}
	defer n.Close()
	th := n.NewThread()
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "READY %d\n", n.Proc())
	w.Flush()
	var pending []pendingSend
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		args := make([]int, 0, len(f))
		for _, a := range f[1:] {
			v, err := strconv.Atoi(a)
			if err != nil {
				v = -1
			}
			args = append(args, v)
		}
		switch f[0] {
		case "routes":
			n.Routes().Format(w)
			fmt.Fprintln(w, "END")
		case "lookup": // lookup DST SIZE
			rt, ok := n.Routes().Lookup(uint32(args[0]), int64(args[1]))
			if !ok {
				fmt.Fprintln(w, "ERR no route")
			} else {
				fmt.Fprintf(w, "OK %d %s %d %d\n", rt.Port, rt.Network, rt.NextHop, rt.Hops)
			}
		case "waitroute": // waitroute DST 1|0: until dst is reachable (1) or not (0)
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, ok := n.Routes().Lookup(uint32(args[0]), 0)
				if ok == (args[1] == 1) {
					fmt.Fprintln(w, "OK")
					break
				}
				if time.Now().After(deadline) {
					fmt.Fprintln(w, "ERR timeout")
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		case "send": // send DST TAG SIZE...: in order, message i seeded with i
			start := time.Now()
			var err error
			for i, sz := range args[2:] {
				if err = th.Send(ctx, pcor.Addr{Proc: pcor.ProcID(args[0])}, pcor.Tag(args[1]), randomBytes(sz, uint64(i))); err != nil {
					break
				}
			}
			if err != nil {
				fmt.Fprintln(w, "ERR", err)
			} else {
				fmt.Fprintln(w, "OK", time.Since(start).Nanoseconds())
			}
		case "recv": // recv SRC TAG SIZE...: checks size, content and order
			var err error
			for i, sz := range args[2:] {
				var m pcor.Message
				m, err = th.Recv(ctx, pcor.Addr{Proc: pcor.ProcID(args[0])}, pcor.Tag(args[1]))
				if err == nil && !bytes.Equal(m.Data, randomBytes(sz, uint64(i))) {
					err = fmt.Errorf("message %d (%d bytes, want %d) differs", i, len(m.Data), sz)
				}
				if err != nil {
					break
				}
			}
			if err != nil {
				fmt.Fprintln(w, "ERR", err)
			} else {
				fmt.Fprintln(w, "OK")
			}
		case "isend": // isend DST TAG SIZE
			pending = append(pending, pendingSend{pcor.ProcID(args[0]),
				th.Isend(pcor.Addr{Proc: pcor.ProcID(args[0])}, pcor.Tag(args[1]), randomBytes(args[2], 0)), time.Now()})
			fmt.Fprintln(w, "OK")
		case "waitall": // waitall SECONDS: the outcome of every isend
			wctx, wcancel := context.WithTimeout(ctx, time.Duration(args[0])*time.Second)
			for _, p := range pending {
				err := p.req.Wait(wctx)
				kind := "ok"
				var ue *pcor.UnreachableError
				switch {
				case errors.As(err, &ue):
					kind = "unreachable:" + strings.ReplaceAll(ue.Reason, " ", "_")
				case errors.Is(err, pcor.ErrPeerDown):
					kind = "peerdown"
				case err != nil:
					kind = "other:" + strings.ReplaceAll(err.Error(), " ", "_")
				}
				fmt.Fprintf(w, "RESULT %d %s\n", p.dst, kind)
			}
			wcancel()
			pending = nil
			fmt.Fprintln(w, "END")
		case "stats":
			for i, s := range n.Stats() {
				fmt.Fprintf(w, "PORT %d %d %d %d %d %d %d\n", i, s.FragsSent, s.BytesSent, s.Forwarded,
					s.Retransmits, s.Drops["no-route"], s.Drops["too-big"])
			}
			fmt.Fprintln(w, "END")
		case "quit":
			fmt.Fprintln(w, "OK")
			w.Flush()
			return 0
		default:
			fmt.Fprintln(w, "ERR unknown command", f[0])
		}
		w.Flush()
	}
	return 0
}
