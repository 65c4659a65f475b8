// Package tally holds counts and flags that one thread at a time writes
// and any thread reads: the statistics a port's driving thread keeps, a
// flag the holder of a lock raises.
//
// An atomic add or store is a locked instruction on amd64 (some 10-20 ns
// here, more under load), and a message's path used to make a dozen of
// them for counts alone. Where the writers are one at a time (they hold
// a lock, or a token, that orders them), a count needs no locked
// instruction: the writer adds with a plain instruction, and a reader
// loads the word atomically, which on a 64-bit machine sees some value
// the word held (never a torn one). A reader so sees a count that may lag
// behind the writer's latest by the adds still in its store buffer, never
// one that goes back.
//
// Under the race detector every add and store is atomic and also writes
// a shadow word plainly, so that two writers not ordered by a lock are
// reported as a race: the one-writer rule is checked by the tests.
// Machines of 32 bits, whose 64-bit words cannot be read whole, always
// use atomic operations.
package tally
