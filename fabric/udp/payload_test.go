package udp

import "testing"

func TestPayloadForMTU(t *testing.T) {
	for _, c := range []struct {
		mtu  int
		ipv6 bool
		want int
	}{
		{EthernetMTU, false, 1472},
		{EthernetMTU, true, 1452},
		{9000, false, 8972},
		{65536, false, MaxPayload},
		{65536, true, 65536 - 48},
	} {
		if got := PayloadForMTU(c.mtu, c.ipv6); got != c.want {
			t.Errorf("PayloadForMTU(%d, ipv6=%v) = %d, want %d", c.mtu, c.ipv6, got, c.want)
		}
	}
}
