//go:build race

package cluster

// Under the race detector JPEG decoding is about ten times slower, so the
// in-process comparison checks three of the seven regions; the process
// test still checks all seven.
var inProcessRegions = []int{0, 3, 6}
