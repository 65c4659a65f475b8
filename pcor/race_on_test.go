//go:build race

package pcor_test

// raceEnabled: the race detector slows everything several times, so
// throughput ratios are not judged under it.
const raceEnabled = true
