// The keys: the modal first, then a pane typing a filter, then the
// global keys, then the active pane.

package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
)

func (m Model) capturing() bool { return m.cmd.Open() || m.activePane().Capturing() }

// key handles a key press: the modal first, then a pane typing a filter,
// then the global keys, then the active pane.
func (m Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if m.modal != nil {
		return m.modalKey(msg)
	}
	if m.capturing() {
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
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.RemoveOne):
		return m.openRemoveOne()
	case key.Matches(msg, k.Journal):
		return m.openJournal()
	case key.Matches(msg, k.Command):
		c := *m.cmd
		cmd := c.Start()
		m.cmd = &c
		return m, cmd
	case key.Matches(msg, k.Help):
		h := *m.help
		h.ShowAll = !h.ShowAll
		m.help = &h
		m.resize()
	case key.Matches(msg, k.NextPane):
		m.activate((m.active + 1) % Pane(len(m.panes)))
	case key.Matches(msg, k.PrevPane):
		m.activate((m.active + Pane(len(m.panes)) - 1) % Pane(len(m.panes)))
	case key.Matches(msg, k.Copy):
		id, ok := m.activePane().Selected()
		if !ok {
			m.setFlash("nothing to copy on this row", true)
			return m, nil
		}
		m.setFlash("copied "+id+" to the clipboard (OSC 52)", false)
		return m, tea.SetClipboard(id)
	case key.Matches(msg, k.Drill):
		d, ok := m.activePane().Detail()
		if !ok {
			return m.toPane(msg)
		}
		m.modal = openDetail(d, m.st)
		return m, nil
	case key.Matches(msg, k.StopPass):
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
	case key.Matches(msg, k.ForceImages):
		return m.openPreview(engine.PassImages, false)
	case key.Matches(msg, k.ForceContainers):
		return m.openPreview(engine.PassContainers, false)
	case key.Matches(msg, k.ReclaimAll):
		return m.openPreview(engine.PassReclaimAll, false)
	case key.Matches(msg, k.ReadOnly):
		m.setFlash("read-only: i, x and R are disabled (d still previews)", true)
	case key.Matches(msg, k.DryRun):
		return m.openPreview(engine.PassFull, true)
	case key.Matches(msg, k.Pause):
		if m.o.Controller == nil {
			m.setFlash("no scheduler to pause", true)
			return m, nil
		}
		pause := !m.status.Paused
		if pause {
			m.setFlash("pausing periodic passes (forced passes still run)", false)
		} else {
			m.setFlash("resuming periodic passes", false)
		}
		return m, pauseCmd(m.o.Controller, pause)
	case key.Matches(msg, k.Refresh):
		m.setFlash("refreshing…", false)
		return m, m.startRefresh(true)
	case key.Matches(msg, k.Faster):
		return m, m.stepRefresh(-1)
	case key.Matches(msg, k.Slower):
		return m, m.stepRefresh(+1)
	case key.Matches(msg, k.Freeze):
		m.frozen = !m.frozen
		if m.frozen {
			m.setStickyFlash("display frozen: no refresh until f (GC keeps running)")
		} else {
			m.setFlash("display live", false)
			return m, m.startRefresh(true)
		}
	default:
		for i, b := range k.Panes {
			if key.Matches(msg, b) {
				m.activate(Pane(i))
				return m, nil
			}
		}
		return m.toPane(msg)
	}
	return m, nil
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
	return m, tea.Quit
}
