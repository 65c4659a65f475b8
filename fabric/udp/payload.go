package udp

import "github.com/pcor-go/pcor/fabric"

// Header sizes and the largest UDP payloads.
const (
	ipv4Overhead = 20 + 8 // IPv4 + UDP headers
	ipv6Overhead = 40 + 8 // IPv6 + UDP headers
	// MaxPayload is the largest UDP payload an IPv4 datagram carries, and
	// the largest total a GSO send may carry.
	MaxPayload = fabric.MaxDatagramSize
	// EthernetMTU is the MTU of an Ethernet link.
	EthernetMTU = 1500
)

// PayloadForMTU is the largest UDP payload that crosses a link of the
// given MTU without IP fragmentation, over IPv6 or IPv4.
func PayloadForMTU(mtu int, ipv6 bool) int {
	if ipv6 {
		return min(mtu-ipv6Overhead, MaxPayload)
	}
	return min(mtu-ipv4Overhead, MaxPayload)
}
