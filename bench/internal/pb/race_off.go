//go:build !race

package pb

const raceEnabled = false
