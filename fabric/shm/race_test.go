//go:build race

package shm

// raceEnabled: the race detector allocates, so allocation counts mean
// nothing.
const raceEnabled = true
