package hws

import (
	"sync"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/routing"
)

// TrackerConfig configures a Tracker.
type TrackerConfig struct {
	// Lists, if set, are explicit groups (see Explicit); otherwise the
	// groups are discovered from the network (see Discover).
	Lists [][]uint32
	// Model prices the links for discovery (zero value: the routing
	// package's DefaultModel).
	Model *routing.Model
	// OnChange, if set, is called after every change of the groups with
	// the old and new groups, from the goroutine that fed the change. It
	// must not call the Tracker.
	OnChange func(old, cur *Groups)
}

// A Tracker keeps the groups of a running application current as processes
// join, leave and die: feed it the directory's membership (Reset) and then
// its events (Update, e.g. from pcor.JoinConfig.OnEvent). Masters are
// re-elected on every change, so a group whose master died gets the next
// lowest process id as master. Its methods may be called concurrently.
type Tracker struct {
	cfg     TrackerConfig
	mu      sync.Mutex
	members map[uint32]directory.Member
	cur     *Groups
}

// NewTracker returns a tracker with no members.
func NewTracker(cfg TrackerConfig) *Tracker {
	if cfg.Model == nil {
		m := routing.DefaultModel()
		cfg.Model = &m
	}
	return &Tracker{cfg: cfg, members: map[uint32]directory.Member{}, cur: &Groups{}}
}

// Reset replaces the membership (for instance with directory.Client.Members).
func (t *Tracker) Reset(members []directory.Member) {
	t.mu.Lock()
	t.members = make(map[uint32]directory.Member, len(members))
	for _, m := range members {
		t.members[m.Proc] = m
	}
	old, cur := t.rebuildLocked()
	t.mu.Unlock()
	t.changed(old, cur)
}

// Update applies one membership event.
func (t *Tracker) Update(ev directory.Event) {
	t.mu.Lock()
	switch ev.Kind {
	case directory.Joined:
		t.members[ev.Member.Proc] = ev.Member
	case directory.Left:
		delete(t.members, ev.Member.Proc)
	}
	old, cur := t.rebuildLocked()
	t.mu.Unlock()
	t.changed(old, cur)
}

// Groups returns the current groups.
func (t *Tracker) Groups() *Groups {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

func (t *Tracker) rebuildLocked() (old, cur *Groups) {
	ms := make([]directory.Member, 0, len(t.members))
	for _, m := range t.members {
		ms = append(ms, m)
	}
	ms = uniqueMembers(ms)
	old = t.cur
	if t.cfg.Lists != nil {
		g, err := Explicit(ms, t.cfg.Lists)
		if err != nil { // lists were checked when parsed; keep the old groups
			return old, old
		}
		t.cur = g
	} else {
		t.cur = Discover(ms, *t.cfg.Model)
	}
	return old, t.cur
}

func (t *Tracker) changed(old, cur *Groups) {
	if t.cfg.OnChange != nil && old.String() != cur.String() {
		t.cfg.OnChange(old, cur)
	}
}
