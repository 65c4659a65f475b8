package engine

import "testing"

// BenchmarkResumeHeld is what a receive posted, or a control block or
// budget freed, costs in resumeHeld on an engine whose port can hold
// datagrams (shared memory's) and is idle.
func BenchmarkResumeHeld(b *testing.B) {
	e, _, _, _ := shmPair(b, Config{})
	for b.Loop() {
		e.resumeHeld()
	}
}
