// The keys: the modal first, then a pane typing a filter, then the
// global keys, then the active pane.

package tui

import (
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
)

func (m Model) capturing() bool { return m.cmd.Open() || m.activePane().Capturing() }

// key handles a key press: the modal first, then a pane typing a filter,
// then the global keys, group by group, then the active pane.
func (m Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if m.modal != nil {
		return m.modalKey(msg)
	}
	if m.capturing() {
		return m.captureKey(msg)
	}
	for _, group := range globalKeys {
		if nm, cmd, ok := group(m, msg); ok {
			return nm, cmd
		}
	}
	return m.toPane(msg)
}

// keyGroup handles the global keys of one kind; ok is false when the key
// is none of them.
type keyGroup func(m Model, msg tea.KeyPressMsg) (nm tea.Model, cmd tea.Cmd, ok bool)

// globalKeys are the global keys' groups, in the order they are matched:
// a key bound twice does what the first group says.
var globalKeys = [...]keyGroup{Model.dialogKey, Model.navKey, Model.passKey, Model.displayKey, Model.paneNumberKey}

// captureKey sends a key to the command line or to the pane typing a
// filter; only an interrupt escapes them.
func (m Model) captureKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if key.Matches(msg, m.keys.Interrupt) {
		return m.quit()
	}
	if m.cmd.Open() {
		c, cmd := m.cmd.Update(msg)
		m.cmd = &c
		return m, cmd
	}
	return m.toPane(msg)
}

// dialogKey opens what a key asks for: the quit question, the removal of
// one item, the journal, the command line, the full help.
func (m Model) dialogKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd, bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		nm, cmd := m.quit()
		return nm, cmd, true
	case key.Matches(msg, k.RemoveOne):
		nm, cmd := m.openRemoveOne()
		return nm, cmd, true
	case key.Matches(msg, k.Journal):
		nm, cmd := m.openJournal()
		return nm, cmd, true
	case key.Matches(msg, k.Command):
		c := *m.cmd
		cmd := c.Start()
		m.cmd = &c
		return m, cmd, true
	case key.Matches(msg, k.Help), m.help.ShowAll && key.Matches(msg, k.ClearFilter):
		// esc closes the help too, as it closes k9s's.
		h := *m.help
		h.ShowAll = !h.ShowAll
		m.help = &h
		m.resize()
		return m, nil, true
	}
	return m, nil, false
}

// navKey moves between the panes, and copies or opens the active pane's
// selected row (enter or d, as k9s's describe; y or v as its raw object,
// as k9s's YAML). A pane with nothing to open takes the drill key itself.
func (m Model) navKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd, bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.NextPane):
		m.activate((m.active + 1) % Pane(len(m.panes)))
	case key.Matches(msg, k.PrevPane):
		m.activate((m.active + Pane(len(m.panes)) - 1) % Pane(len(m.panes)))
	case key.Matches(msg, k.Copy):
		id, ok := m.activePane().Selected()
		if !ok {
			m.setFlash("nothing to copy on this row", true)
			return m, nil, true
		}
		m.setFlash("copied "+id+" to the clipboard (OSC 52)", false)
		return m, tea.SetClipboard(id), true
	case key.Matches(msg, k.Drill):
		d, ok := m.activePane().Detail()
		if !ok {
			nm, cmd := m.toPane(msg)
			return nm, cmd, true
		}
		m.modal = openDetail(d, m.st)
	case key.Matches(msg, k.Raw):
		m.openRaw()
	default:
		return m, nil, false
	}
	return m, nil, true
}

// openRaw opens the selected row's details showing its raw object, or
// says the row has none.
func (m *Model) openRaw() {
	d, ok := m.activePane().Detail()
	if !ok || d.Raw == nil {
		m.setFlash("no raw object on this row", true)
		return
	}
	md := openDetail(d, m.st)
	md.search.rawOn = md.search.raw != nil
	m.modal = md
}

// passKey controls the passes: stop the one in flight, force a pass
// (after a confirm), preview a dry-run, pause or resume the periodic
// ones. In read-only mode
// the forcing keys only say they are disabled.
func (m Model) passKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd, bool) {
	k := m.keys
	var (
		nm  tea.Model
		cmd tea.Cmd
	)
	switch {
	case key.Matches(msg, k.StopPass):
		nm, cmd = m.stopPass()
	case key.Matches(msg, k.ForceImages):
		nm, cmd = m.openForce(engine.PassImages)
	case key.Matches(msg, k.ForceContainers):
		nm, cmd = m.openForce(engine.PassContainers)
	case key.Matches(msg, k.ReclaimAll):
		nm, cmd = m.openForce(engine.PassReclaimAll)
	case key.Matches(msg, k.ReadOnly):
		m.setFlash("read-only: i, x and R are disabled (D still previews)", true)
		nm = m
	case key.Matches(msg, k.DryRun):
		nm, cmd = m.openPreview(engine.PassFull, true)
	case key.Matches(msg, k.Pause):
		nm, cmd = m.pause()
	default:
		return m, nil, false
	}
	return nm, cmd, true
}

// stopPass stops the pass applied from this dashboard after the item in
// flight; a pass the scheduler runs cannot be stopped here.
func (m Model) stopPass() (tea.Model, tea.Cmd) {
	if m.stopApply == nil {
		if m.status.Running != "" {
			m.setFlash("only a pass applied from this dashboard can be stopped here", true)
		} else {
			m.setFlash("no pass in flight", false)
		}
		return m, nil
	}
	stop := m.stopApply
	m.stopApply = nil
	m.setStickyFlash("stopping the pass after the item in flight…")
	return m, func() tea.Msg { stop(); return nil }
}

// pause pauses the scheduler's periodic passes for as long as this
// dashboard stays, or resumes them.
func (m Model) pause() (tea.Model, tea.Cmd) {
	return m.setPause(!m.status.Paused, engine.Pause{Held: true})
}

// setPause pauses the periodic passes with p, or resumes them.
func (m Model) setPause(pause bool, p engine.Pause) (tea.Model, tea.Cmd) {
	if m.o.Controller == nil || m.o.ReadOnly {
		m.setFlash("no scheduler to pause", true)
		return m, nil
	}
	switch {
	case !pause:
		m.setFlash("resuming periodic passes", false)
	case p.Held:
		m.setFlash("pausing periodic passes while this dashboard stays (forced passes still run)", false)
	default:
		m.setFlash("pausing periodic passes until "+p.Until.Format(time.TimeOnly)+", whether this dashboard stays or not", false)
	}
	return m, pauseCmd(m.ctx, m.o.Controller, pause, p)
}

// displayKey controls what the dashboard shows: refresh now, refresh
// faster or slower, freeze the display or bring it back live.
func (m Model) displayKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd, bool) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Refresh):
		m.setFlash("refreshing…", false)
		return m, m.startRefresh(true), true
	case key.Matches(msg, k.Faster):
		return m, m.stepRefresh(-1), true
	case key.Matches(msg, k.Slower):
		return m, m.stepRefresh(+1), true
	case key.Matches(msg, k.Freeze):
		m.frozen = !m.frozen
		if m.frozen {
			m.setStickyFlash("display frozen: no refresh until f (GC keeps running)")
			return m, nil, true
		}
		m.setFlash("display live", false)
		return m, m.startRefresh(true), true
	}
	return m, nil, false
}

// paneNumberKey brings the pane a number key names on screen.
func (m Model) paneNumberKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd, bool) {
	for i, b := range m.keys.Panes {
		if key.Matches(msg, b) {
			m.activate(Pane(i))
			return m, nil, true
		}
	}
	return m, nil, false
}

func (m Model) toPane(msg tea.Msg) (tea.Model, tea.Cmd) {
	p, cmd := m.activePane().Update(msg)
	m.setPane(m.active, p)
	return m, cmd
}

func (m Model) quit() (tea.Model, tea.Cmd) {
	if kind := m.quitStops(); kind != "" {
		m.modal = &modal{kind: modalQuit, title: fmt.Sprintf("A %s pass is in flight", kind)}
		return m, nil
	}
	if left := m.leftBehind(); left != "" {
		m.modal = &modal{kind: modalLeave, title: "Leaving the agent", lines: []string{left}}
		return m, nil
	}
	return m, tea.Quit
}

// leftBehind says what an attached dashboard leaves on the agent as it
// quits: a pause of its own ends, anyone's other pause stays; "" when the
// agent is not paused, or the dashboard runs its own engine.
func (m Model) leftBehind() string {
	st := m.status
	if m.o.Agent == nil || !st.Paused {
		return ""
	}
	switch {
	case st.PauseHeld && m.pausedHere:
		return "This dashboard's pause ends as it leaves: the agent's periodic passes resume now."
	case st.PauseHeld:
		return "The agent's periodic passes stay paused while the dashboard of " + st.PausedBy + " stays (paused since " + st.PausedSince.Format(time.TimeOnly) + ")."
	}
	until := "until someone resumes them (p)"
	if !st.PausedUntil.IsZero() {
		until = "until " + st.PausedUntil.Format(time.DateTime)
	}
	return "The agent's periodic passes stay paused " + until + ", paused by " + st.PausedBy + "."
}
