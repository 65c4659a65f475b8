// Package pb measures pcor itself: round trips, one-way streams and
// many-thread contention between pcor threads, the near side timing and the
// far side (a peer job) echoing, sinking or sending.
//
// Threads: the near side is thread 0 of process 1; the far side is thread 1
// of process 2 (another process) or of process 1 (the same node). For
// contention, receiver i is thread ContentionBase+i of process 1 and its
// sender is thread ContentionBase+N+i of the far process.
package pb

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pcor-go/pcor/pcor"
)

// Process and thread numbering of the benchmark.
const (
	NearProc       pcor.ProcID   = 1
	FarProc        pcor.ProcID   = 2
	NearThread     pcor.ThreadID = 0
	FarThread      pcor.ThreadID = 1
	ContentionBase pcor.ThreadID = 10
)

// Tags.
const (
	TagData pcor.Tag = 1
	TagAck  pcor.Tag = 2
)

// ParseMode reads "blocking" or "polling".
func ParseMode(s string) (pcor.Mode, error) {
	switch strings.ToLower(s) {
	case "", "blocking":
		return pcor.Blocking, nil
	case "polling":
		return pcor.Polling, nil
	}
	return 0, fmt.Errorf("pb: unknown dispatcher mode %q (blocking or polling)", s)
}

// NewNode opens a node of process proc with one port of the fabric on
// loopback in the given mode, reaching the given peers.
func NewNode(proc pcor.ProcID, fabric string, mode pcor.Mode, jobKey uint64, peers ...pcor.Peer) (*pcor.Node, error) {
	if fabric == "" {
		fabric = "udp"
	}
	addr := "127.0.0.1:0"
	switch fabric {
	case "shm":
		addr = "" // a port name unique to the process
	case "rdma":
		addr = "" // the first device; the endpoint is the port's own queue pair
	}
	return pcor.NewNode(pcor.Config{
		Proc:   proc,
		JobKey: jobKey,
		Listen: []pcor.Listen{{Fabric: fabric, Addr: addr, Mode: mode}},
		Peers:  peers,
	})
}

// FormatAddr is the address string a far job reports: "proc@endpoint".
func FormatAddr(proc pcor.ProcID, endpoint string) string {
	return strconv.FormatUint(uint64(proc), 10) + "@" + endpoint
}

// ParseAddr splits a far job's address.
func ParseAddr(s string) (pcor.ProcID, string, error) {
	p, ep, ok := strings.Cut(s, "@")
	n, err := strconv.ParseUint(p, 10, 32)
	if !ok || err != nil {
		return 0, "", fmt.Errorf("pb: bad far address %q", s)
	}
	return pcor.ProcID(n), ep, nil
}

// Counters are a node's progress counters summed over its ports (see
// pcor.PortStats): who received the datagrams, the waiting threads or the
// dispatchers, and how the progress token moved.
func Counters(node *pcor.Node) map[string]uint64 {
	c := map[string]uint64{}
	for _, s := range node.Stats() {
		c["leads"] += s.Leads
		c["steals"] += s.Steals
		c["handbacks"] += s.Handbacks
		c["givebacks"] += s.GiveBacks
		c["reclaims"] += s.Reclaims
		c["thread-batches"] += s.ThreadBatches
		c["dispatcher-batches"] += s.DispatcherBatches
		c["sleeps"] += s.DriverSleeps
		c["frags-recv"] += s.FragsRecv
		c["acks-sent"] += s.AcksSent
		c["acks-deferred"] += s.AcksDeferred
		c["acks-late"] += s.AcksLate
		c["frags-sent"] += s.FragsSent
		c["msgs-sent"] += s.MessagesSent
		c["bundles"] += s.BundlesSent
		c["msgs-bundled"] += s.MessagesBundled
		c["retransmits"] += s.Retransmits
		c["timeouts"] += s.Timeouts
		c["undone"] += s.SpuriousTimeouts
		c["fast-retrans"] += s.FastRetrans
		c["probes"] += s.Probes
		c["dups"] += s.Duplicates
		c["busy-sent"] += s.BusySent
		c["busy-recv"] += s.BusyRecv
		c["dropped"] += s.DroppedTotal
		c["frags-in-place"] += s.FragsInPlace
	}
	return c
}

// CounterNames orders the keys of Counters for printing.
var CounterNames = []string{"frags-sent", "msgs-sent", "bundles", "msgs-bundled", "frags-recv", "acks-sent", "acks-deferred", "acks-late", "thread-batches", "dispatcher-batches", "sleeps",
	"leads", "steals", "handbacks", "givebacks", "reclaims", "retransmits", "timeouts", "undone", "fast-retrans", "probes", "dups", "busy-sent", "busy-recv", "dropped", "frags-in-place"}
