// The dashboard's clock: the screen is drawn again only when something on
// it changes. Every age and countdown is drawn from its timestamp and the
// model's now, and one tick is armed for the next instant any of them
// reads differently (a seconds countdown each second, a "3h10m" age each
// minute, the Overview's countdowns, read to the minute, each minute);
// messages that change nothing shown draw the last frame again.

package tui

import (
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/internal/grid"
)

// clockMsg is the tick armed for the next change on screen; gen drops
// the ones armed before it.
type clockMsg struct{ gen uint64 }

// frame is the last screen drawn and the model generation it shows, and
// its tab bar and help line with the chrome generation they show.
type frame struct {
	gen    uint64
	screen string
	chrome chrome
}

// chrome is the tab bar, the rule under it and the help line drawn for
// the chrome generation gen. A tick of the clock moves neither (the tab bar's "as of" badge
// aside, which is drawn anew while it shows), so the screen drawn for it
// takes them from here: lipgloss takes about a millisecond to draw them.
type chrome struct {
	gen             uint64
	bar, rule, help string
}

var gens atomic.Uint64

// nextGen returns a model generation no copy of any model has had.
func nextGen() uint64 { return gens.Add(1) }

// tellClock hands the pane on screen the time to draw at.
func (m *Model) tellClock() {
	p, _ := m.activePane().Update(feed.Clock{Now: m.now})
	m.setPane(m.active, p)
}

// nextChange is the next instant at which the screen reads differently
// with no new data: an age or countdown of the pane on screen, the status
// message's expiry, or the freshness mark. The zero time: never.
func (m Model) nextChange() time.Time {
	next := m.activePane().NextChange()
	if m.flash != "" && !m.flashSticky {
		next = grid.Earliest(next, m.flashAt.Add(flashTTL))
	}
	if m.haveSnap && !m.eventsLive {
		at := m.freshAt()
		if m.asOfShown() {
			next = grid.Earliest(next, format.NextChange(at, m.now))
		} else {
			next = grid.Earliest(next, at.Add(m.o.RefreshInterval+time.Nanosecond))
		}
	}
	return next
}

// asOfShown reports whether the tab bar says when the data was read: while
// polling, once it is older than the refresh interval.
func (m Model) asOfShown() bool {
	return m.haveSnap && !m.eventsLive && m.now.Sub(m.freshAt()) > m.o.RefreshInterval
}

// armClock arms one tick for the next change on screen, unless it is armed
// already. The tick comes on the whole second at or after the change
// (onSecond).
func (m *Model) armClock() tea.Cmd {
	next := onSecond(m.nextChange())
	if next.IsZero() || next.Equal(m.clockAt) {
		return nil
	}
	m.clockAt = next
	m.clockGen++
	gen := m.clockGen
	return m.o.timer(max(next.Sub(m.o.Now()), time.Millisecond), func(time.Time) tea.Msg { return clockMsg{gen: gen} })
}

// onSecond is t, or the next whole second of the clock after it: the
// instant the clock ticks for a change due at t. Each age and countdown
// changes at an instant of its own (a countdown to 12:00:00.3 a second
// after an age from 11:58:10.8), so several on screen at a second's
// resolution would draw several frames a second, each parsed whole by
// Bubble Tea's renderer; on the whole second they all move in one. Each
// still reads as it should at the instant it is drawn, at most a second
// after its own change, within what a second's resolution shows.
func onSecond(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	if r := t.Truncate(time.Second); !r.Equal(t) {
		return r.Add(time.Second)
	}
	return t
}
