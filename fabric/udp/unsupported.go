//go:build !linux

package udp

import (
	"errors"
	"time"

	"github.com/pcor-go/pcor/fabric"
)

// ErrUnsupported is returned by Listen where the UDP fabric is not built:
// it needs Linux (sendmmsg, recvmmsg, UDP GSO/GRO).
var ErrUnsupported = errors.New("udp: the UDP fabric needs Linux")

// Port is not available on this system; Listen always fails.
type Port struct{}

var (
	_ fabric.Port   = (*Port)(nil)
	_ fabric.Waiter = (*Port)(nil)
)

// Listen returns ErrUnsupported.
func Listen(addr string, cfg Config) (*Port, error) { return nil, ErrUnsupported }

func (*Port) Send([]fabric.Datagram) (int, error)           { return 0, ErrUnsupported }
func (*Port) Receive([][]byte) (int, error)                 { return 0, ErrUnsupported }
func (*Port) Poll([][]byte) (int, error)                    { return 0, ErrUnsupported }
func (*Port) BatchSize() int                                { return DefaultBatchSize }
func (*Port) MaxDatagram(fabric.Endpoint) int               { return 0 }
func (*Port) LocalEndpoint() fabric.Endpoint                { return nil }
func (*Port) ParseEndpoint(string) (fabric.Endpoint, error) { return nil, ErrUnsupported }
func (*Port) Kind() string                                  { return "udp" }
func (*Port) Alloc(n int) []byte                            { return make([]byte, n) }
func (*Port) Close() error                                  { return nil }
func (*Port) Wait([][]byte, time.Time) (int, error)         { return 0, ErrUnsupported }
func (*Port) Park([][]byte) (int, error)                    { return 0, ErrUnsupported }
func (*Port) Interrupt() error                              { return ErrUnsupported }
