package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
)

// Issue 12 bug 3: status-line messages expire.
func TestStatusMessagesExpire(t *testing.T) {
	c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	now := fixedNow
	m := New(fixtureOptions(c, &now))
	m = refreshNow(t, m)
	m = press(m, "r")
	if !strings.Contains(m.flash, "refreshing") {
		t.Fatalf("status %q after r", m.flash)
	}
	now = now.Add(flashTTL - time.Second)
	if m = refreshNow(t, m); m.flash == "" {
		t.Error("the message went before its time")
	}
	now = now.Add(2 * time.Second)
	if m = refreshNow(t, m); m.flash != "" || strings.Contains(ansi.Strip(m.Screen()), "refreshing") {
		t.Errorf("status %q after %s", m.flash, flashTTL+time.Second)
	}
	t.Run("a sticky message stays while its state lasts", func(t *testing.T) {
		mm := press(m, "f") // frozen
		now = now.Add(time.Hour)
		mm = send(mm, keyMsg("x"))
		if !strings.Contains(mm.flash, "frozen") {
			t.Errorf("status %q, want the frozen notice to stay", mm.flash)
		}
	})
}

// Issue 12 bug 4: the totals of an applied pass add up to what was
// planned.
func TestPassSummaryAddsUp(t *testing.T) {
	r := engine.PassReport{ID: 3, Kind: engine.PassFull, Undone: 1, Stopped: "stopped on request", Items: []engine.ItemResult{
		{Outcome: engine.OutcomeRemoved}, {Outcome: engine.OutcomeRemoved}, {Outcome: engine.OutcomeGone},
		{Outcome: engine.OutcomeSkipped, Detail: "in use since planning"}, {Outcome: engine.OutcomeFailed}, {Outcome: engine.OutcomeNotRun},
	}}
	got := passSummary(r)
	for _, want := range []string{"6 planned", "removed 2", "already gone 1", "skipped 1 (in use since planning)", "failed 1", "not run 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
}
