package pcor

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/pcor-go/pcor/directory"
)

// TestJoinMembership: rank 0 serves the directory, rank 1 joins; they
// exchange a message; when rank 1 closes, rank 0's receive waiting on it
// fails with ErrPeerDown.
func TestJoinMembership(t *testing.T) {
	ln, err := directoryAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := JoinConfig{Coord: ln, JobKey: 0xfeed, Size: 2}
	n0, err := Join(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n0.Close()
	cfg.Rank = 1
	n1, err := Join(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n0.Directory().Wait(ctx, 2); err != nil {
		t.Fatal(err)
	}
	a, b := n0.NewThread(), n1.NewThread()
	if err := b.Send(ctx, a.Addr(), 7, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if m, err := a.Recv(ctx, b.Addr(), 7); err != nil || string(m.Data) != "hi" {
		t.Fatalf("%q %v", m.Data, err)
	}
	req := a.Irecv(b.Addr(), 8, nil)
	n1.Close()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	if err := req.Wait(wctx); !errors.Is(err, ErrPeerDown) {
		t.Fatalf("receive from a closed member: %v, want ErrPeerDown", err)
	}
	if n1.Directory() != nil {
		t.Fatal("closed node still has a directory session")
	}
}

func TestParseListen(t *testing.T) {
	ls, err := ParseListen("10.0.0.1:0@lan, rdma/mlx5_0:1@ib,127.0.0.1:5")
	if err != nil || len(ls) != 3 || ls[0].Network != "lan" || ls[1].Fabric != "rdma" || ls[1].Addr != "mlx5_0:1" || ls[2].Fabric != "udp" {
		t.Fatalf("%+v %v", ls, err)
	}
	if _, err := ParseListen("/x"); !errors.Is(err, directory.ErrEnv) {
		t.Fatal(err)
	}
}

// directoryAddr finds a free loopback TCP address.
func directoryAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
