package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
)

// TestNewStateDirAsksBeforePeriodicPasses pins issue 41: a dashboard
// given a state dir it had just created started its periodic passes at
// once. Its scheduler now starts paused and the first frame asks; only y
// starts the passes, and any other answer leaves them paused.
func TestNewStateDirAsksBeforePeriodicPasses(t *testing.T) {
	open := func(t *testing.T) (Model, *fakeController) {
		t.Helper()
		c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
		c.status.Paused, c.status.PausedBy = true, "new state dir"
		now := fixedNow
		o := fixtureOptions(c, &now)
		o.NewStateDir = "/var/lib/nodegc-new"
		m := send(New(o), windowSize(100, 30))
		return refreshNow(t, m), c
	}
	t.Run("the first frame asks, naming the dir", func(t *testing.T) {
		m, _ := open(t)
		s := ansi.Strip(m.Screen())
		for _, want := range []string{"Start periodic passes on a new state dir?", "/var/lib/nodegc-new", "y start them", "n/esc keep them paused"} {
			if !strings.Contains(s, want) {
				t.Errorf("first frame lacks %q:\n%s", want, s)
			}
		}
	})
	for _, k := range []string{"n", "esc", "enter", "q"} {
		t.Run(k+" keeps the passes paused and quits nothing", func(t *testing.T) {
			m, c := open(t)
			nm, cmd := m.Update(keyMsg(k))
			m = runCmd(nm.(Model), cmd)
			if m.ModalOpen() || !c.Status().Paused {
				t.Errorf("after %s: modal open %v, paused %v", k, m.ModalOpen(), c.Status().Paused)
			}
			if cmd != nil {
				if _, quit := cmd().(tea.QuitMsg); quit {
					t.Errorf("%s quit the dashboard", k)
				}
			}
		})
	}
	t.Run("y starts them", func(t *testing.T) {
		m, c := open(t)
		m = press(m, "y")
		if m.ModalOpen() || c.Status().Paused {
			t.Errorf("after y: modal open %v, paused %v", m.ModalOpen(), c.Status().Paused)
		}
		if n := len(c.appliedPlans()); n != 0 {
			t.Errorf("y applied %d plans: it only starts the schedule", n)
		}
	})
	t.Run("a state dir that was there asks nothing", func(t *testing.T) {
		m, _ := fixtureModel(t, 100, 30)
		if m.ModalOpen() {
			t.Errorf("a modal is open:\n%s", ansi.Strip(m.Screen()))
		}
	})
}
