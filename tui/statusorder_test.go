package tui

import (
	"strings"
	"testing"

	"github.com/nodegc/nodegc/engine"
)

// A refresh reads the scheduler's status when it starts and lands after
// the snapshot, which on a loaded node takes seconds. The notice that the
// pass ended may come in between; the refresh's older status must not
// overwrite it. It did: an attached dashboard then showed the pass in
// flight, and no last pass, until the next re-list a minute later (issue
// 24, the hang of the attached dashboard's tmux test under load).
func TestRefreshKeepsTheNewerStatus(t *testing.T) {
	m, c := fixtureModel(t, 160, 40)
	running := engine.Status{Running: engine.PassImages, Passes: 7, Seq: 5}
	c.mu.Lock()
	c.status = running
	c.mu.Unlock()
	refresh := m.startRefresh(true)() // reads the status now: in flight

	r := engine.PassReport{ID: 1, Kind: engine.PassImages, Forced: true, StartedAt: fixedNow, FinishedAt: fixedNow}
	done := engine.Status{Passes: 8, LastReport: &r, Seq: 6}
	c.mu.Lock()
	c.status = done
	c.mu.Unlock()
	m = send(m, noticeMsg{n: engine.Notice{Report: &r, Status: done}, ch: c.ch, ok: true})
	m = send(m, refresh) // the slow refresh lands last

	s := screen(m)
	if strings.Contains(s, "pass in flight") || !strings.Contains(s, "#1 images") {
		t.Errorf("the refresh's older status overwrote the notice's:\n%s", s)
	}
	if m.status.Seq != done.Seq {
		t.Errorf("status seq %d, want %d", m.status.Seq, done.Seq)
	}

	// A newer status from a refresh is taken.
	later := engine.Status{Paused: true, Passes: 8, LastReport: &r, Seq: 7}
	c.mu.Lock()
	c.status = later
	c.mu.Unlock()
	m = refreshNow(t, m)
	if !m.status.Paused {
		t.Errorf("the refresh's newer status was dropped: %+v", m.status)
	}
}
