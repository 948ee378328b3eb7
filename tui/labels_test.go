package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
)

// screen is the model's frame as plain text.
func screen(m Model) string { return ansi.Strip(m.Screen()) }

// applied feeds the model a pass applied from the dashboard, as its
// command would report it.
func applied(m Model, r engine.PassReport) Model {
	nm, cmd := m.Update(appliedMsg{kind: r.Kind, report: r})
	return runCmd(nm.(Model), cmd)
}

// stoppedReclaim is a forced reclaim-all pass stopped with X after one
// sandbox and one container, with 14 items left, that took 1.37 s.
func stoppedReclaim() engine.PassReport {
	return engine.PassReport{
		ID: 1, Run: "r1", Kind: engine.PassReclaimAll, Forced: true,
		StartedAt: fixedNow, FinishedAt: fixedNow.Add(1370 * time.Millisecond),
		Stopped: "stopped on request after the items in flight", Undone: 14,
		Items: []engine.ItemResult{
			{Kind: engine.ItemSandbox, ID: "sb1", Outcome: engine.OutcomeRemoved},
			{Kind: engine.ItemContainer, ID: "c1", Outcome: engine.OutcomeRemoved},
			{Kind: engine.ItemImage, ID: "sha256:aa", Outcome: engine.OutcomeNotRun},
		},
	}
}

// Issue 23 items 1, 2, 10, 12 and 13: every label on the tab bar, the
// Events row and the pass details says what is so.
func TestLabelsSayWhatIsSo(t *testing.T) {
	t.Run("read-only shows once on the tab bar", func(t *testing.T) {
		now := fixedNow
		o := fixtureOptions(newFakeController(fixtureSnapshot(), engine.DefaultPolicy()), &now)
		o.ReadOnly = true
		m := refreshNow(t, send(New(o), windowSize(160, 30)))
		bar := strings.Split(screen(m), "\n")[0]
		if n := strings.Count(bar, "read-only"); n != 1 {
			t.Errorf("the tab bar says read-only %d times: %q", n, bar)
		}
	})

	m, _ := fixtureModel(t, 120, 30)
	m = applied(m, stoppedReclaim())
	m = press(m, "5")
	events := screen(m)
	t.Run("a stopped pass is not ok on Events", func(t *testing.T) {
		row := lineWith(events, "reclaim-all")
		if strings.Contains(row, " ok") || !strings.Contains(row, "stopped, 14 not run") {
			t.Errorf("Events row %q, want it to say the pass stopped with 14 not run", row)
		}
	})
	t.Run("KIND keeps the forced pass's *", func(t *testing.T) {
		if !strings.Contains(events, "reclaim-all*") {
			t.Errorf("no reclaim-all* on Events:\n%s", events)
		}
	})
	t.Run("TOOK has sub-second precision", func(t *testing.T) {
		if row := lineWith(events, "reclaim-all"); !strings.Contains(row, "1.37s") {
			t.Errorf("Events row %q, want TOOK 1.37s", row)
		}
	})

	detail := screen(press(m, "enter"))
	t.Run("the details name the sandboxes", func(t *testing.T) {
		if !strings.Contains(detail, "SANDBOXES (1)") || strings.Contains(detail, "SANDBOXS") {
			t.Errorf("details:\n%s\nwant SANDBOXES (1)", detail)
		}
	})
	t.Run("the details name the real journal", func(t *testing.T) {
		if !strings.Contains(detail, "in /var/lib/nodegc/journal.jsonl") || strings.Contains(detail, "<state-dir>") {
			t.Errorf("details:\n%s\nwant the journal's real path", detail)
		}
	})
	t.Run("from, to and took agree", func(t *testing.T) {
		if !strings.Contains(detail, "12:00:00.00 → 12:00:01.37 (1.37s)") {
			t.Errorf("details:\n%s\nwant 12:00:00.00 → 12:00:01.37 (1.37s)", lineWith(detail, "RAN"))
		}
	})
	t.Run("a short pass takes milliseconds", func(t *testing.T) {
		r := stoppedReclaim()
		r.ID, r.Kind = 2, engine.PassImages
		r.FinishedAt = r.StartedAt.Add(340 * time.Millisecond)
		if row := lineWith(screen(applied(m, r)), "images*"); !strings.Contains(row, "340ms") {
			t.Errorf("Events row %q, want TOOK 340ms", row)
		}
	})
}

// Issue 23 item 11: the quit question goes once the pass it is about
// ends, and says so.
func TestQuitQuestionGoesWithItsPass(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	m = press(m, "D")
	nm, _ := m.Update(keyMsg("y")) // apply starts; its result comes below
	m = nm.(Model)
	nm, _ = m.Update(keyMsg("q"))
	m = nm.(Model)
	if !strings.Contains(screen(m), "pass is in flight") {
		t.Fatalf("q during a pass did not ask:\n%s", screen(m))
	}
	r := stoppedReclaim()
	r.Kind, r.Stopped, r.Undone = engine.PassFull, "", 0
	m = applied(m, r)
	if s := screen(m); strings.Contains(s, "pass is in flight") {
		t.Errorf("the quit question stays after the pass ended:\n%s", s)
	}
}

// Quitting asks first only when it would stop a pass: one this dashboard
// started, or any pass of its own engine. An attached dashboard's quit
// leaves the agent's passes running, so it does not ask about them.
func TestQuitAsksOnlyWhenItStopsAPass(t *testing.T) {
	tests := []struct {
		name     string
		attached bool
		running  engine.PassKind
		wantAsk  bool
	}{
		{"its own engine's pass in flight: asks", false, engine.PassImages, true},
		{"no pass in flight: quits", false, "", false},
		{"attached, the agent's own pass in flight: quits", true, engine.PassImages, false},
		{"attached, no pass in flight: quits", true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
			now := fixedNow
			o := fixtureOptions(c, &now)
			if tt.attached {
				o.Agent = &Agent{PID: 42, StartedAt: fixedNow.Add(-time.Hour)}
			}
			m := send(New(o), windowSize(100, 30))
			m = refreshNow(t, m)
			m = send(m, noticeMsg{ok: true, n: engine.Notice{Status: engine.Status{Running: tt.running}}})
			nm, cmd := m.Update(keyMsg("q"))
			m = nm.(Model)
			asked := strings.Contains(screen(m), "pass is in flight")
			quits := cmd != nil && isQuit(cmd)
			if asked != tt.wantAsk || quits == tt.wantAsk {
				t.Errorf("asked %v, quits %v; want asked %v:\n%s", asked, quits, tt.wantAsk, screen(m))
			}
		})
	}
	t.Run("attached, a pass this dashboard started: asks", func(t *testing.T) {
		c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
		now := fixedNow
		o := fixtureOptions(c, &now)
		o.Agent = &Agent{PID: 42, StartedAt: fixedNow.Add(-time.Hour)}
		m := send(New(o), windowSize(100, 30))
		m = refreshNow(t, m)
		m = press(m, "D")
		nm, _ := m.Update(keyMsg("y")) // apply starts; its result is not fed back
		m = nm.(Model)
		nm, _ = m.Update(keyMsg("q"))
		m = nm.(Model)
		if !strings.Contains(screen(m), "pass is in flight") {
			t.Errorf("q during this dashboard's own pass did not ask:\n%s", screen(m))
		}
	})
}

// lineWith is the first line of s holding sub.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// Issue 23 item 19: a Containers filter that matches nothing says so,
// not that the node has no dead containers.
func TestContainersFilterWithoutMatchSaysSo(t *testing.T) {
	m, _ := fixtureModel(t, 120, 30)
	m = press(m, "3", "/", "z", "z", "q", "enter")
	s := screen(m)
	if strings.Contains(s, "no dead containers") || !strings.Contains(s, "no match") {
		t.Errorf("Containers with a filter that matches nothing:\n%s\nwant no match", s)
	}
}

// Issue 23 item 5: passes that finished at the same time each count on
// the freed-per-pass chart.
func TestPassesWithEqualFinishTimesAllCount(t *testing.T) {
	m, _ := fixtureModel(t, 120, 30)
	for id := int64(1); id <= 3; id++ {
		r := stoppedReclaim()
		r.ID, r.Stopped, r.Undone = id, "", 0
		r.FinishedAt = fixedNow // the same finish time
		m = applied(m, r)
	}
	if n := len(history(m).Freed); n != 3 {
		t.Errorf("the chart holds %d passes, want 3", n)
	}
	if s := screen(press(m, "1")); !strings.Contains(s, "3 passes") {
		t.Errorf("Overview:\n%s\nwant 3 passes", s)
	}
}

// isQuit reports whether cmd, or a command batched in it, quits the
// program. Each command runs in its own goroutine, and one still running
// after a few seconds (a clock tick waits its second) counts as no quit.
func isQuit(cmd tea.Cmd) bool {
	msgs := make(chan tea.Msg, 1)
	go func() { msgs <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-msgs:
	case <-time.After(3 * time.Second):
		return false
	}
	switch msg := msg.(type) {
	case tea.QuitMsg:
		return true
	case tea.BatchMsg:
		for _, c := range msg {
			if c != nil && isQuit(c) {
				return true
			}
		}
	}
	return false
}
