package udp

import (
	"errors"
	"testing"
)

// FuzzParseEndpoint: an endpoint reaches this process from the directory:
// any text is refused with ErrBadEndpoint or gives an unzoned address
// with a port, whose string parses back to the same endpoint.
func FuzzParseEndpoint(f *testing.F) {
	f.Add("127.0.0.1:9000")
	f.Add("[::1]:9000")
	f.Add("[::ffff:10.0.0.1]:1")
	f.Add("[fe80::1%eth0]:5")
	f.Add("10.0.0.1:0")
	f.Add("host:80")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEndpoint(s)
		if err != nil {
			if !errors.Is(err, ErrBadEndpoint) {
				t.Fatalf("error %v is not ErrBadEndpoint", err)
			}
			return
		}
		ap := e.AddrPort()
		if ap.Port() == 0 || ap.Addr().Zone() != "" || ap.Addr().Is4In6() || e.is4 != ap.Addr().Is4() {
			t.Fatalf("%q accepted as %v", s, ap)
		}
		again, err := ParseEndpoint(e.String())
		if err != nil || again.AddrPort() != ap || again.String() != e.String() || !sameDest(e, again) {
			t.Fatalf("%q: %v prints %q, which parses as %v, %v", s, ap, e.String(), again, err)
		}
	})
}
