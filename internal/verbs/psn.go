package verbs

import (
	"crypto/rand"
	"encoding/binary"
)

// RandomPSN returns a random 24-bit initial packet sequence number.
func RandomPSN() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:]) & 0xffffff
}
