package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
)

// typed presses each character of s, then enter, on the command line.
func typed(m Model, s string) Model {
	m = press(m, ":")
	for _, r := range s {
		m = press(m, string(r))
	}
	return press(m, "enter")
}

// attachedFixture is the fixture dashboard as if attached to an agent.
func attachedFixture(t *testing.T) (Model, *fakeController) {
	t.Helper()
	c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	now := fixedNow
	o := fixtureOptions(c, &now)
	o.Agent = &Agent{PID: 7, StartedAt: fixedNow.Add(-time.Hour)}
	m := send(New(o), tea.WindowSizeMsg{Width: 160, Height: 30})
	return refreshNow(t, m), c
}

func TestPauseIsSomeones(t *testing.T) {
	t.Run("p pauses while this dashboard stays, and the badge says who and since when", func(t *testing.T) {
		m, c := attachedFixture(t)
		m = press(m, "p")
		st := c.Status()
		if !st.Paused || !st.PauseHeld || !st.PausedUntil.IsZero() {
			t.Fatalf("p paused with %+v; want a held pause, no expiry", st)
		}
		if s := ansi.Strip(m.Screen()); !strings.Contains(s, "Ⅱ paused (uid 0 pid 42 12:00)") {
			t.Errorf("no badge naming who paused:\n%s", s)
		}
		m = press(m, "q")
		if m.modal == nil || m.modal.kind != modalLeave || !strings.Contains(strings.Join(m.modal.lines, " "), "This dashboard's pause ends as it leaves") {
			t.Fatalf("q did not say the pause ends: %+v", m.modal)
		}
		if _, cmd := m.Update(keyMsg("q")); cmd == nil {
			t.Error("q on the leaving question did not quit")
		}
	})
	t.Run(":pause 30m pauses until then, and q says the agent stays paused", func(t *testing.T) {
		m, c := attachedFixture(t)
		m = typed(m, "pause 30m")
		st := c.Status()
		if !st.Paused || st.PauseHeld || !st.PausedUntil.Equal(fixedNow.Add(30*time.Minute)) {
			t.Fatalf(":pause 30m paused with %+v; want until 12:30, not held", st)
		}
		if s := ansi.Strip(m.Screen()); !strings.Contains(s, "Ⅱ paused (uid 0 pid 42 12:00–12:30)") {
			t.Errorf("no badge with the expiry:\n%s", s)
		}
		m = press(m, "q")
		if m.modal == nil || m.modal.kind != modalLeave || !strings.Contains(strings.Join(m.modal.lines, " "), "stay paused until 2025-06-01 12:30:00, paused by uid 0 pid 42") {
			t.Fatalf("q did not say what stays: %+v", m.modal)
		}
		m = press(m, "n")
		if m.ModalOpen() {
			t.Error("n did not stay")
		}
	})
	t.Run("q quits at once when nothing is left behind", func(t *testing.T) {
		m, _ := attachedFixture(t)
		nm, cmd := m.Update(keyMsg("q"))
		if nm.(Model).ModalOpen() || cmd == nil {
			t.Errorf("q with no pause asked or did not quit: modal %v", nm.(Model).modal)
		}
	})
}
