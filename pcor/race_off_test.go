//go:build !race

package pcor_test

const raceEnabled = false
