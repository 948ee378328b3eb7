package tui

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
)

// openForce asks before a forced pass of the kind: y runs it
// (Controller.Force), paused or not. The pass plans as it starts, as the
// kubelet's do; the modal shows what it would remove as of the shown
// refresh, planned here with the engine's policy (Options.Plan).
func (m Model) openForce(kind engine.PassKind) (tea.Model, tea.Cmd) {
	if m.o.Controller == nil || m.o.Plan == nil {
		m.setFlash("no scheduler: no pass to run", true)
		return m, nil
	}
	if m.busy != "" {
		m.setFlash(fmt.Sprintf("a %s pass is in flight", m.busy), true)
		return m, nil
	}
	m.previewSeq++
	m.modal = &modal{kind: modalForce, title: passTitle(kind, false), pass: kind, loading: true}
	return m, forcePlanCmd(m.o.Plan, m.snap, kind, m.at, m.previewSeq)
}

// forcePlanCmd plans the shown snapshot for the force modal, off the
// screen's goroutine; it makes no call to the runtime.
func forcePlanCmd(plan func(engine.Snapshot, engine.PassKind, time.Time) (engine.Plan, error), s engine.Snapshot, kind engine.PassKind, at time.Time, seq uint64) tea.Cmd {
	return func() tea.Msg {
		p, err := plan(s, kind, at)
		return previewMsg{seq: seq, kind: kind, report: engine.PassReport{Plan: p}, err: err}
	}
}

// runForced closes the force modal d and runs its pass
// (Controller.Force) in a command, which X stops after the item in
// flight.
func (m Model) runForced(d modal) (tea.Model, tea.Cmd) {
	m.modal = nil
	m.busy = d.pass
	m.progress = &engine.Progress{Kind: d.pass}
	m.setStickyFlash(fmt.Sprintf("running a forced %s pass…", d.pass))
	ctx, cancel := context.WithCancel(m.ctx)
	m.stopApply = cancel
	c, kind := m.o.Controller, d.pass
	return m, func() tea.Msg {
		r, err := c.Force(ctx, kind)
		return appliedMsg{kind: kind, report: r, err: err}
	}
}
