package main

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"os"

	"github.com/pcor-go/pcor/bench/internal/pb"
	"github.com/pcor-go/pcor/bench/internal/peer"
	"github.com/pcor-go/pcor/bench/internal/progress"
	"github.com/pcor-go/pcor/bench/internal/raw"
	"github.com/pcor-go/pcor/pcor"
)

// childHandlers are the jobs the peer process serves.
func childHandlers() peer.Handlers { return handlers(nil) }

func handlers(shared *pcor.Node) peer.Handlers {
	h := peer.Handlers{"udp-echo": raw.UDPEcho, "udp-sink": raw.UDPSink, "tcp-sink": raw.TCPSink,
		"verbs-echo": raw.VerbsEcho, "verbs-sink": raw.VerbsSink}
	for _, k := range []string{raw.KindConn, raw.KindSys, raw.KindSysPoll} {
		h[k+"-echo"] = raw.DgramEcho(k)
	}
	maps.Copy(h, pb.Handlers(shared))
	return h
}

// runner holds what one command's measurements share: the job key and
// the progress line.
type runner struct {
	o      options
	jobKey uint64
	prog   *progress.Line
	stderr io.Writer
	dumped bool // stalled wrote the goroutines' stacks
}

func newRunner(o options, stderr io.Writer) (*runner, error) {
	var k [8]byte
	rand.Read(k[:])
	r := &runner{o: o, jobKey: binary.LittleEndian.Uint64(k[:]) | 1, stderr: stderr}
	if f, ok := stderr.(*os.File); ok {
		r.prog = progress.Start(f)
	}
	return r, nil
}

func (r *runner) close() error {
	r.prog.Stop()
	return nil
}

// baselineHost starts a host for the far side of one baseline: a peer
// process of its own (placement procs) or this process. Each series has
// its own, so all far sides are up at once and samples can alternate.
func (r *runner) baselineHost() (peer.Host, error) {
	if r.o.placement == placeProcs {
		return peer.Spawn(r.o.trace)
	}
	return peer.NewLocal(handlers(nil)), nil
}

// pcorSide is the near side of pcor measurements in one dispatcher mode
// and the host of its far side.
type pcorSide struct {
	fabric string
	mode   string
	node   *pcor.Node
	near   *pb.Near
	host   peer.Host
	own    bool   // the host is closed with the side
	name   string // of its series (seriesName)
}

// openPcor opens the near side of pcor over the fabric (--fabric, or udp
// for the baseline of --fabric shm) in one dispatcher mode.
func (r *runner) openPcor(fabric, mode string) (*pcorSide, error) {
	m, err := pb.ParseMode(mode)
	if err != nil {
		return nil, err
	}
	node, err := pb.NewNode(pb.NearProc, fabric, m, r.jobKey)
	if err != nil {
		return nil, fmt.Errorf("pcor node (%s, %s): %w", fabric, mode, err)
	}
	s := &pcorSide{fabric: fabric, mode: mode, node: node, near: pb.NewNear(node, r.o.maxSize()), own: true, name: r.seriesName(fabric, mode)}
	if r.o.placement == placeProcs {
		if s.host, err = peer.Spawn(r.o.trace); err != nil {
			node.Close()
			return nil, err
		}
	} else {
		s.host = peer.NewLocal(handlers(node))
	}
	return s, nil
}

// job describes a far-side pcor job for this side.
func (s *pcorSide) job(r *runner, kind string, size int) peer.Job {
	j := peer.Job{Kind: kind, Fabric: s.fabric, Mode: s.mode, JobKey: r.jobKey, Size: size, Window: r.o.window}
	if r.o.placement == placeProcs {
		j.Addr = s.node.Endpoints()[0].Addr
	}
	return j
}

func (s *pcorSide) close() error {
	s.near.Close()
	if s.own {
		s.host.Close()
	}
	return s.node.Close()
}

func (s *pcorSide) series() string { return s.name }

// seriesName names the measurements of pcor over fabric in mode: pcor/MODE
// over --fabric, pcor-FABRIC/MODE (a baseline) over another.
func (r *runner) seriesName(fabric, mode string) string {
	if fabric != r.o.fabric {
		return "pcor-" + fabric + "/" + mode
	}
	return "pcor/" + mode
}
