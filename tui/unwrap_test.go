package tui

import (
	"github.com/nodegc/nodegc/tui/events"
	"github.com/nodegc/nodegc/tui/overview"
)

// unwrap returns the component inside a pane, when it is an M: tests
// read a pane's own state; the root never does.
func unwrap[M component[M], P sizable[M]](p pane) (M, bool) {
	a, ok := p.(adapted[M, P])
	return a.m, ok
}

// passesListed returns how many pass rows the Events pane lists (a run
// of idle periodic passes is one): the total its info line shows (N/M
// match under a filter).
func passesListed(m Model) int {
	for _, p := range m.panes {
		if e, ok := unwrap[events.Model](p); ok {
			return e.Total
		}
	}
	return 0
}

// history returns the session's history the Overview keeps.
func history(m Model) overview.History {
	for _, p := range m.panes {
		if o, ok := unwrap[overview.Model](p); ok {
			return o.History()
		}
	}
	return overview.History{}
}
