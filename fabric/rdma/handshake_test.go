package rdma

import (
	"errors"
	"testing"

	"github.com/pcor-go/pcor/internal/verbs"
)

func TestCMMsgRoundTrip(t *testing.T) {
	m := cmMsg{kind: cmRep, key: 0x0102030405060708, from: udAddr{qpn: 0x17}, qp: verbs.Remote{QPN: 0x11, PSN: 0xabcdef},
		rma: verbs.Remote{QPN: 0x12, PSN: 0x123456}, peer: 0x21}
	m.from.gid[15] = 7
	m.qp.GID, m.rma.GID = m.from.gid, m.from.gid
	b := m.marshal(nil)
	if len(b) != cmMsgLen {
		t.Fatalf("%d bytes, want %d", len(b), cmMsgLen)
	}
	got, err := parseCMMsg(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != m {
		t.Fatalf("got %+v, want %+v", got, m)
	}
	rej := cmMsg{kind: cmRej, key: 9, from: m.from, qp: verbs.Remote{GID: m.from.gid, QPN: 0x17}, rma: verbs.Remote{GID: m.from.gid}, peer: 0x21}
	if got, err := parseCMMsg(rej.marshal(nil)); err != nil || got != rej {
		t.Fatalf("REJ parses as %+v, %v", got, err)
	}
	rej.reason = rejFull
	if got, err := parseCMMsg(rej.marshal(nil)); err != nil || got != rej {
		t.Fatalf("REJ (full) parses as %+v, %v", got, err)
	}
	bad := func(f func(c *cmMsg)) []byte {
		c := m
		f(&c)
		return c.marshal(nil)
	}
	for i, b := range [][]byte{b[:10], b[:cmMsgLen-1], append([]byte("XXXXXXXX"), b[8:]...),
		bad(func(c *cmMsg) { c.kind = 7 }), bad(func(c *cmMsg) { c.kind = 0 }),
		bad(func(c *cmMsg) { c.qp.QPN = 0 }), bad(func(c *cmMsg) { c.from.qpn = 1 }),
		bad(func(c *cmMsg) { c.rma.QPN = 1 << 24 }), bad(func(c *cmMsg) { c.peer = 0 }),
		bad(func(c *cmMsg) { c.kind = cmReq })} {
		if _, err := parseCMMsg(b); !errors.Is(err, ErrHandshake) {
			t.Fatalf("malformed message %d accepted: %v", i, err)
		}
	}
}

func TestUDAddr(t *testing.T) {
	a, err := parseUDAddr("10.0.2.15:17")
	if err != nil {
		t.Fatal(err)
	}
	if a.qpn != 17 || a.gid[10] != 0xff || a.gid[11] != 0xff || a.gid[12] != 10 || a.gid[15] != 15 {
		t.Fatalf("parsed %+v", a)
	}
	if s := a.endpoint().String(); s != "10.0.2.15:17" {
		t.Fatalf("round trip %q", s)
	}
	if s := (udAddr{gid: verbs.GID{0: 0xfe, 1: 0x80, 15: 1}, qpn: 0xffffff}).endpoint(); s != "[fe80::1]:16777215" {
		t.Fatalf("IPv6 GID endpoint %q", s)
	}
}

func FuzzParseCMMsg(f *testing.F) {
	m := cmMsg{kind: cmReq, from: udAddr{qpn: 0x17}, qp: verbs.Remote{QPN: 0x11, PSN: 1}, rma: verbs.Remote{QPN: 0x12}}
	f.Add(m.marshal(nil))
	m.kind, m.peer = cmPing, 0x40
	f.Add(m.marshal(nil))
	m.kind, m.key = cmRej, 42
	f.Add(m.marshal(nil))
	f.Add([]byte(cmMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseCMMsg(b)
		if err != nil {
			return
		}
		if again, err := parseCMMsg(m.marshal(nil)); err != nil || again != m {
			t.Fatalf("%+v re-parses as %+v, %v", m, again, err)
		}
	})
}

// FuzzParseUDAddr: a port's endpoint (GID:QPN) reaches other processes
// through the directory: any text is refused or gives an address with a
// valid queue pair number whose endpoint parses back to it.
func FuzzParseUDAddr(f *testing.F) {
	f.Add("10.0.2.15:17")
	f.Add("[fe80::1]:16777215")
	f.Add("[::ffff:10.0.0.1]:2")
	f.Add("10.0.0.1:1")
	f.Add("10.0.0.1:16777216")
	f.Add("host:99")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := parseUDAddr(s)
		if err != nil {
			return
		}
		if !validQPN(a.qpn) {
			t.Fatalf("%q parsed with queue pair number %d", s, a.qpn)
		}
		if again, err := parseUDAddr(string(a.endpoint())); err != nil || again != a {
			t.Fatalf("%q: %+v, whose endpoint %q parses as %+v, %v", s, a, a.endpoint(), again, err)
		}
	})
}
