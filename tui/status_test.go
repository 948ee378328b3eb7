package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/style"
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
		mm = send(mm, keyMsg("z"))
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

// Issue 12 bug 5: the preview uses a wide terminal's room, and its TOTAL
// line stays in sight however long the list is.
func TestPreviewWidthAndPinnedTotal(t *testing.T) {
	long := "registry.example.com/team/some-very-long-image-name-for-batch-jobs:v1.2.3"
	var p engine.Plan
	p.Pass = engine.PassImages
	for i := range 60 {
		p.ImageGC.Remove = append(p.ImageGC.Remove, engine.ImageRemoval{ID: fmt.Sprintf("sha256:%064d", i), RepoTags: []string{long}, SizeBytes: 1 << 20, Reason: engine.RemoveForSpace})
	}
	st := style.Default(true)
	for _, size := range [][2]int{{80, 24}, {220, 60}} {
		w, h := size[0], size[1]
		d := &modal{kind: modalPreview, plan: p}
		d.lines, d.items = planLines(engine.Snapshot{}, p, previewWidth(w))
		out := ansi.Strip(d.render(&st, w, h, false))
		if !strings.Contains(out, "TOTAL 60 items") {
			t.Errorf("%dx%d: the TOTAL line is not on screen:\n%s", w, h, out)
		}
		if whole := strings.Contains(out, long); whole != (w >= 160) {
			t.Errorf("%dx%d: the whole name shown = %v", w, h, whole)
		}
	}
}

// Issue 12 bug 6: the full help at 80×24 drops no key.
func TestFullHelpFitsSmallTerminals(t *testing.T) {
	m, _ := fixtureModel(t, 80, 24)
	m = press(m, "2", "?")
	s := ansi.Strip(m.Screen())
	for _, g := range m.FullHelp() {
		for _, b := range g {
			if !b.Enabled() {
				continue
			}
			if h := b.Help(); !strings.Contains(s, h.Key+" ") && !strings.Contains(s, h.Key+"\n") {
				t.Errorf("key %q (%s) is missing from the full help at 80x24", h.Key, h.Desc)
			}
		}
	}
	for i, l := range strings.Split(s, "\n") {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("line %d is %d wide", i+1, w)
		}
	}
}

// TestPassSummaryPutsWhatWasFreedFirst pins issue 41: after a stopped pass
// the status line ended "; free…" at 120 columns: what was removed and
// freed comes before the reasons, which a narrow line cuts.
func TestPassSummaryPutsWhatWasFreedFirst(t *testing.T) {
	r := engine.PassReport{ID: 7, Kind: engine.PassContainers, Undone: 6, EstimatedBytesFreed: 3 << 30,
		Stopped: "the operator stopped the pass after the item in flight (X)",
		Items:   []engine.ItemResult{{Outcome: engine.OutcomeRemoved}, {Outcome: engine.OutcomeNotRun}}}
	got := ansi.Truncate(passSummary(r), 100, "…")
	if !strings.Contains(got, "removed 1, freed ≈ 3.0 GiB") {
		t.Errorf("at 100 cells the summary reads %q: what was freed is cut", got)
	}
}

// TestHelpFitsEveryPaneAt80x24 pins issue 41: the full help (?) on
// Cgroups spilled its fourth column below the grid of the others at
// 80×24. On every pane every enabled key shows, no line passes 80
// columns, the screen keeps its 24 lines, and nothing says keys are left
// out.
func TestHelpFitsEveryPaneAt80x24(t *testing.T) {
	for _, pane := range []string{"1", "2", "3", "4", "5"} {
		m, _ := fixtureModel(t, 80, 24)
		m = press(m, pane, "?")
		s := ansi.Strip(m.Screen())
		if strings.Contains(s, "more lines of keys") {
			t.Errorf("pane %s: the help leaves keys out at 80x24:\n%s", pane, s)
		}
		if n := len(strings.Split(s, "\n")); n > 24 {
			t.Errorf("pane %s: %d lines", pane, n)
		}
		for _, g := range m.FullHelp() {
			for _, b := range g {
				if h := b.Help(); b.Enabled() && !strings.Contains(s, h.Key+" ") {
					t.Errorf("pane %s: key %q (%s) missing from the help:\n%s", pane, h.Key, h.Desc, s)
				}
			}
		}
		for i, l := range strings.Split(s, "\n") {
			if w := ansi.StringWidth(l); w > 80 {
				t.Errorf("pane %s: line %d is %d wide", pane, i+1, w)
			}
			// No column goes below the others: the pane's navigation
			// starts on the first line, beside the global keys.
			if pane != "1" && strings.Contains(l, "next pane") && !strings.Contains(l, "↑/k") {
				t.Errorf("pane %s: the pane's keys are not beside the global ones:\n%s", pane, s)
			}
		}
	}
}
