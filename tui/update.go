// The root's message handlers, one per message type; update routes to
// them.

package tui

import (
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/feed"
)

// onWindowSize gives every pane the new size, and re-lays an open preview
// to the new width.
func (m Model) onWindowSize(msg tea.WindowSizeMsg) (Model, tea.Cmd) {
	m.width, m.height = msg.Width, msg.Height
	m.resize()
	if d := m.modal; d != nil && (d.kind == modalPreview || d.kind == modalForce) && !d.loading && d.err == "" {
		dd := *d
		dd.lines, dd.items = planLines(m.snap, dd.plan, previewWidth(m.width))
		m.modal = &dd
	}
	return m, nil
}

// onClock redraws the header's clock, unless the clock was armed for a
// change that has since moved.
func (m Model) onClock(msg clockMsg) (Model, tea.Cmd) {
	if msg.gen != m.clockGen {
		m.quiet = true // armed for a change that moved
		return m, nil
	}
	m.clockAt, m.ticked = time.Time{}, true
	return m, nil
}

// onTick lists the node again at the refresh interval and re-arms the
// tick. A list since the tick was armed (an event, a pass, r; while the
// event stream is live, a listing of the engine's that read the same)
// resets the interval: the tick waits out the rest of it.
func (m Model) onTick(msg tickMsg) (Model, tea.Cmd) {
	m.quiet = true // the re-list shows when its answer comes
	if msg.gen != m.listGen {
		return m, nil // armed at an interval no longer in force
	}
	since := m.at
	if m.eventsLive {
		since = m.freshAt()
	}
	if rest := m.listEvery - m.o.Now().Sub(since); m.haveSnap && !m.refreshing && rest > 0 && rest < m.listEvery {
		return m, tick(rest, m.listGen)
	}
	return m, tea.Batch(tick(m.listEvery, m.listGen), m.poll())
}

// onRefresh takes a new snapshot and plan, brings the panes' feeds up to
// date, and starts the refresh an event asked for while this one ran.
func (m Model) onRefresh(msg RefreshMsg) (Model, tea.Cmd) {
	m = m.applyRefresh(msg)
	ev, _ := m.syncEvents(false)
	cg := tea.Batch(m.cgroupsDue(), ev, m.syncSafety(), m.afterRefresh(msg))
	if m.eventPending && !m.refreshing {
		m.eventPending = false
		return m, tea.Batch(cg, m.startRefresh(false))
	}
	return m, cg
}

// onCgroups hands the panes the cgroup tree of the latest read; an older
// read's answer is dropped.
func (m Model) onCgroups(msg cgroupsMsg) (Model, tea.Cmd) {
	if msg.seq != m.cgSeq {
		return m, nil
	}
	m.cgReading, m.cgAt = false, msg.at
	return m, m.broadcast(feed.Cgroups{Tree: msg.tree, At: msg.at, Err: msg.err})
}

// onFs compares the image filesystem's usage with the plan's. When it
// moved, images came or went without a container event: the node is
// listed again. A reading that failed, or that moved, is followed by the
// next a refresh interval later; a steady one backs the readings off.
func (m Model) onFs(msg fsMsg) (Model, tea.Cmd) {
	m.fsReading, m.quiet = false, true
	u, err := engine.UsagePercent(msg.fs)
	if msg.err != nil || !m.haveSnap || err != nil || u != m.plan.ImageGC.UsagePercent {
		m.fsEvery = 0
		cmd := m.pulseSooner()
		if msg.err == nil && m.haveSnap && err == nil {
			cmd = tea.Batch(cmd, m.onEvent())
		}
		return m, cmd
	}
	m.fsEvery = min(2*m.usageEvery(), m.usageQuiet())
	return m, nil
}

// onNotice takes one of the scheduler's notices: its status, a pass's
// progress and report, and an event; then waits for the next.
func (m Model) onNotice(msg noticeMsg) (Model, tea.Cmd) {
	if !msg.ok {
		return m, nil
	}
	m.setStatus(msg.n.Status)
	var cmds []tea.Cmd
	if cmd, moved := m.syncEvents(true); moved {
		cmds = append(cmds, cmd)
	} else if msg.n.Containers && m.eventsLive {
		m.quiet = true // the re-list shows when its answer comes
		cmds = append(cmds, m.onEvent())
	}
	if p := msg.n.Progress; p != nil {
		pp := *p
		m.progress = &pp
	}
	if m.status.Running == "" && m.busy == "" {
		m.progress = nil
	}
	if r := msg.n.Report; r != nil && !r.DryRun {
		cmds = append(cmds, m.onPassReport(*r)...)
	}
	if e := msg.n.Event; e != nil {
		cmds = append(cmds, m.broadcast(feed.Event{Event: *e}))
	}
	m.pushOverview()
	return m, tea.Batch(append(cmds, waitNotice(msg.ch))...)
}

// onPassReport tells the panes about a pass the scheduler finished and
// lists the node again if the pass changed it (or no event stream would
// say so).
func (m *Model) onPassReport(r engine.PassReport) []tea.Cmd {
	m.progress = nil
	cmd := m.broadcast(feed.Pass{Report: r})
	if !m.eventsLive || passChanged(r) {
		return []tea.Cmd{cmd, m.startRefresh(false)}
	}
	// No refresh follows (whose end would): the pass's own listing and
	// plan are garbage once the scheduler is done with them, which it may
	// not be as its notice comes, and so are the frames drawn since the
	// last release. The next pulse hands them back
	// (docs/performance.md).
	return []tea.Cmd{cmd, m.releaseSoon()}
}

// onPreview fills the open preview with the plan it asked for; an answer
// for a preview cancelled or overtaken is dropped.
func (m Model) onPreview(msg previewMsg) (Model, tea.Cmd) {
	if m.modal == nil || (m.modal.kind != modalPreview && m.modal.kind != modalForce) || msg.seq != m.previewSeq {
		return m, nil // cancelled or overtaken
	}
	m.modal.loading = false
	if msg.err != nil {
		m.modal.err = msg.err.Error()
		return m, nil
	}
	m.modal.plan = msg.report.Plan
	if one := m.modal.one; one != nil {
		plan, why := onePlan(m.snap, msg.report.Plan, *one)
		m.modal.plan = plan
		if why != "" {
			m.modal.title, m.modal.lines, m.modal.items = "Nothing to remove", []string{why}, 0
			return m, nil
		}
	}
	m.modal.lines, m.modal.items = planLines(m.snap, m.modal.plan, previewWidth(m.width))
	return m, nil
}

// onApplied ends a pass applied from this dashboard: it says how the pass
// went, tells the panes, and lists the node again.
func (m Model) onApplied(msg appliedMsg) (Model, tea.Cmd) {
	m.busy, m.progress = "", nil
	if m.stopApply != nil {
		m.stopApply()
		m.stopApply = nil
	}
	var cmd tea.Cmd
	switch {
	case errors.Is(msg.err, engine.ErrStalePlan):
		m.setFlash(fmt.Sprintf("%s pass not started: %v", msg.kind, msg.err), true)
	case msg.err != nil:
		m.setFlash(fmt.Sprintf("%s pass failed: %v", msg.kind, msg.err), true)
	default:
		r := msg.report
		cmd = m.broadcast(feed.Pass{Report: r})
		m.setFlash(passSummary(r), !r.OK())
	}
	m.pushOverview()
	return m, tea.Batch(cmd, m.startRefresh(true))
}

// onKey handles a key press; a pane the key brought on screen shows a
// fresh cgroup tree.
func (m Model) onKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	nm, cmd := m.key(msg)
	mm, ok := nm.(Model)
	if !ok {
		return nm, cmd
	}
	cg := mm.cgroupsDue() // before mm is returned: it re-arms the pulse
	return mm, tea.Batch(cmd, cg)
}
