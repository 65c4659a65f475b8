//go:build race

package pb

// raceEnabled says the race detector is on (see sinkLoop).
const raceEnabled = true
