package tui

import (
	"strings"
	"testing"
	"time"
)

// pressKey sends a key and drops its commands: the re-list it arms is
// a real timer, which runCmd would wait for and follow forever.
func pressKey(m Model, k string) Model {
	nm, _ := m.Update(keyMsg(k))
	return nm.(Model)
}

// Issue 23 item 30: + and - change the refresh interval from inside the
// dashboard (btop), the periodic re-list follows it, and the tab bar
// says it.
func TestRefreshIntervalKeys(t *testing.T) {
	m, _ := fixtureModel(t, 160, 30)
	bar := func(m Model) string { return strings.Split(screen(m), "\n")[0] }
	if b := bar(m); !strings.Contains(b, "refresh 2s") {
		t.Fatalf("tab bar %q, want refresh 2s", b)
	}
	steps := []struct {
		key  string
		want time.Duration
		bar  string
	}{
		{"+", 5 * time.Second, "refresh 5s"}, // btop's +: a longer interval
		{"=", 10 * time.Second, "refresh 10s"},
		{"-", 5 * time.Second, "refresh 5s"},
		{"_", 2 * time.Second, "refresh 2s"},
		{"-", time.Second, "refresh 1s"},
		{"-", time.Second, "refresh 1s"}, // the shortest stays
	}
	for _, s := range steps {
		m = pressKey(m, s.key)
		if got := m.ListInterval(); got != s.want {
			t.Errorf("after %q the re-list runs every %s, want %s", s.key, got, s.want)
		}
		if b := bar(m); !strings.Contains(b, s.bar) || !strings.Contains(b, "● running") {
			t.Errorf("after %q the tab bar reads %q, want %q and the state", s.key, b, s.bar)
		}
	}
	if st := lineWith(screen(m), "refresh every"); !strings.Contains(st, "shortest") {
		t.Errorf("status line %q, want it to say 1s is the shortest", st)
	}

	t.Run("80 columns", func(t *testing.T) {
		m, _ := fixtureModel(t, 80, 24)
		m = pressKey(m, "+")
		if b := bar(m); !strings.Contains(b, "⟳ 5s") || !strings.Contains(b, "● running") {
			t.Errorf("tab bar %q, want ⟳ 5s and the state", b)
		}
	})
	t.Run("help", func(t *testing.T) {
		if h := screen(pressKey(m, "?")); !strings.Contains(lineWith(h, "+/-"), "refresh interval") {
			t.Errorf("full help has no +/-:\n%s", h)
		}
	})
}

// TestColonQQuits pins issue 41: `:q` quits as q does (vim, k9s), instead
// of ":q: no such pane".
func TestColonQQuits(t *testing.T) {
	for _, c := range []string{"q", "quit"} {
		m, _ := fixtureModel(t, 120, 36)
		m = pressKey(m, ":")
		for _, r := range c {
			m = pressKey(m, string(r))
		}
		_, run := m.Update(keyMsg("enter"))
		if run == nil {
			t.Fatalf(":%s: enter ran nothing", c)
		}
		nm, cmd := m.Update(run())
		m = nm.(Model)
		if strings.Contains(m.flash, "no such pane") {
			t.Errorf(":%s: %q", c, m.flash)
		}
		if cmd == nil || !isQuit(cmd) {
			t.Errorf(":%s did not quit", c)
		}
	}
}
