package athread

// Counters are a runtime's statistics since it started.
type Counters struct {
	Threads     uint64 // threads created in this process
	TasksRun    uint64 // thread bodies run on this process's VPs
	StealsTried uint64 // steal attempts between VPs of this process
	Steals      uint64 // successful ones
	// Between processes.
	RemoteStealsTried uint64 // requests for work sent
	RemoteSteals      uint64 // threads received in answer
	StealsServed      uint64 // requests answered (with or without a thread)
	Given             uint64 // threads handed to other processes (stolen or placed)
	ResultsIn         uint64 // results of threads run elsewhere
	ResultsOut        uint64 // results sent back for threads run here
	ReRuns            uint64 // idempotent threads re-run after their process died
	PeersLost         uint64 // processes found gone
	BytesSent         uint64 // runtime message bytes sent
	BytesReceived     uint64 // runtime message bytes received
	Malformed         uint64 // runtime messages dropped as unreadable
}

// Counters returns the runtime's statistics.
func (rt *Runtime) Counters() Counters {
	var s Counters
	s.Threads = rt.created.Load()
	for _, w := range rt.vps {
		s.TasksRun += w.tasksRun.Load()
		s.StealsTried += w.stealsTried.Load()
		s.Steals += w.stealsWon.Load()
	}
	if c := rt.cl; c != nil {
		s.RemoteStealsTried = c.stealsSent.Load()
		s.RemoteSteals = c.stealsGot.Load()
		s.StealsServed = c.stealsServed.Load()
		s.Given = c.tasksGiven.Load()
		s.ResultsIn = c.resultsIn.Load()
		s.ResultsOut = c.resultsOut.Load()
		s.ReRuns = c.reRuns.Load()
		s.PeersLost = c.peersLost.Load()
		s.BytesSent = c.bytesOut.Load()
		s.BytesReceived = c.bytesIn.Load()
		s.Malformed = c.malformed.Load()
	}
	return s
}
