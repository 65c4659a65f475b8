package rdma

import (
	"testing"

	"github.com/pcor-go/pcor/fabric"
)

func TestParseEndpoint(t *testing.T) {
	var p Port // ParseEndpoint needs no device
	for _, s := range []string{"10.0.2.15:17", "[fe80::1]:2", "[::1]:16777215"} {
		ep, err := p.ParseEndpoint(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if ep.String() != s {
			t.Fatalf("%q round-trips as %q", s, ep.String())
		}
	}
	for _, s := range []string{"", "127.0.0.1", ":80", "10.0.0.1:0", "10.0.0.1:1", "10.0.0.1:16777216", "host:17", "10.0.0.1:qp", "a:b:c"} {
		if _, err := p.ParseEndpoint(s); err == nil {
			t.Fatalf("%q accepted", s)
		}
	}
	if p.Kind() != "rdma" || p.MaxDatagram(Endpoint("x:1")) != 65507 || p.BatchSize() <= 0 {
		t.Fatal("port constants")
	}
	var _ fabric.Endpoint = Endpoint("x:1")
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.Port != 1 || c.KeepAlive <= 0 || c.PeerTimeout < 4*c.KeepAlive || c.RecvPerPeer > c.RecvBuffers || c.SendDepth > c.SendBuffers || c.RNRRetry != 7 {
		t.Fatalf("defaults %+v", c)
	}
	c = Config{RecvBuffers: 8, RecvPerPeer: 32, SendBuffers: 4, SendDepth: 64}.withDefaults()
	if c.RecvPerPeer != 8 || c.SendDepth != 4 {
		t.Fatalf("per-peer sizes not clamped to the pools: %+v", c)
	}
}
