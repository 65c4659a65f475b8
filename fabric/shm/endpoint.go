package shm

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadEndpoint is returned by ParseEndpoint for malformed text.
var ErrBadEndpoint = errors.New("shm: bad endpoint")

// Endpoint is the address of a shared-memory port: the identity of the
// host's shared memory (see HostID) and the port's name.
type Endpoint struct {
	Host string
	Name string
}

// String returns "host/name".
func (e Endpoint) String() string { return e.Host + "/" + e.Name }

// ParseEndpoint parses "host/name".
func ParseEndpoint(s string) (Endpoint, error) {
	host, name, ok := strings.Cut(s, "/")
	if !ok || host == "" || !validName(name) {
		return Endpoint{}, fmt.Errorf("%w: %q (want host/name)", ErrBadEndpoint, s)
	}
	return Endpoint{Host: host, Name: name}, nil
}
