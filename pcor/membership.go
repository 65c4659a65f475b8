package pcor

import (
	"sync"

	"github.com/pcor-go/pcor/directory"
	"github.com/pcor-go/pcor/routing"
)

// membership is a joined node's directory session and the routes it
// keeps from it. Membership changes arrive on the client's reader
// goroutine, possibly before the node exists; until then they are held
// (the client's cache reflects them).
type membership struct {
	client *directory.Client
	server *directory.Server // when this process serves the directory
	user   func(directory.Event)
	prices *routing.Prices
	once   sync.Once

	mu      sync.Mutex
	router  *router
	pending []directory.Event
}

func (m *membership) onEvent(ev directory.Event) {
	m.mu.Lock()
	if m.router == nil {
		m.pending = append(m.pending, ev)
		m.mu.Unlock()
		return
	}
	m.router.event(ev)
	m.mu.Unlock()
	if m.user != nil {
		m.user(ev)
	}
}

// attach gives n its membership: routes to every cached member, which
// already reflects the changes held meanwhile; those are then passed on to
// the user's callback.
func (m *membership) attach(n *Node) {
	m.mu.Lock()
	n.mem = m
	m.router = newRouter(n.eng, uint32(n.Proc()))
	m.router.prices = m.prices
	m.router.reset(m.client.Members())
	held := m.pending
	m.pending = nil
	m.mu.Unlock()
	if m.user != nil {
		for _, ev := range held {
			m.user(ev)
		}
	}
}

// shutdown leaves the directory (and stops serving it) and waits for the
// session's goroutines. It is idempotent.
func (m *membership) shutdown() {
	m.once.Do(func() {
		if m.client != nil {
			m.client.Close()
		}
		if m.server != nil {
			m.server.Close()
		}
	})
}
