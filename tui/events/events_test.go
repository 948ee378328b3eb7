package events

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// TestPaneKeepsWhatItShows pins what the Events pane keeps of a pass: its
// items, its events and the plan's removals, which its rows and details
// show (an item's name comes from the plan's removal), but not the plan's
// account of every image it kept, which nothing there shows.
func TestPaneKeepsWhatItShows(t *testing.T) {
	m := New(keys.Default(false), style.Default(true))
	m.SetSize(100, 30)
	r := engine.PassReport{ID: 3, Kind: engine.PassImages}
	r.Plan.ImageGC.Remove = []engine.ImageRemoval{{ID: "sha256:aaa", RepoTags: []string{"busybox:1"}}}
	r.Plan.ImageGC.Keep = []engine.ImageKeep{{ID: "sha256:bbb", Reason: engine.KeepTooYoung}}
	r.Plan.ImageGC.Order = []string{"sha256:aaa", "sha256:bbb"}
	r.Items = []engine.ItemResult{{Kind: engine.ItemImage, ID: "sha256:aaa", Outcome: engine.OutcomeRemoved}}
	r.Events = []engine.Event{{Reason: "FreeDiskSpaceFailed", Warning: true}}
	m, _ = m.Update(feed.Pass{Report: r})
	if len(m.passes) != 1 {
		t.Fatalf("the pane keeps %d passes; want 1", len(m.passes))
	}
	p := m.passes[0]
	if p.ID != 3 || len(p.Items) != 1 || len(p.Events) != 1 || len(p.Plan.ImageGC.Remove) != 1 {
		t.Errorf("the pane lost what it shows of the pass: %+v", p)
	}
	if p.Plan.ImageGC.Keep != nil || p.Plan.ImageGC.Order != nil {
		t.Errorf("the pane keeps the plan's kept images (%d) and order (%d); want neither", len(p.Plan.ImageGC.Keep), len(p.Plan.ImageGC.Order))
	}
	if len(r.Plan.ImageGC.Keep) != 1 || len(r.Plan.ImageGC.Order) != 2 {
		t.Error("the published report itself was changed")
	}
}

// TestIdlePassesFoldIntoOneRow pins how the pane folds a run of periodic
// passes that removed nothing into the newest of them, as the API server
// folds a repeated event (count, first time): kinds fold apart, and a
// pass that removed, failed or warned of something, or was forced, keeps
// a row of its own.
func TestIdlePassesFoldIntoOneRow(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	pass := func(id int64, kind engine.PassKind, change func(*engine.PassReport)) engine.PassReport {
		r := engine.PassReport{ID: id, Run: "r", Kind: kind, StartedAt: t0.Add(time.Duration(id) * time.Minute)}
		r.FinishedAt = r.StartedAt.Add(time.Second)
		if change != nil {
			change(&r)
		}
		return r
	}
	removed := func(r *engine.PassReport) {
		r.Items = []engine.ItemResult{{Kind: engine.ItemContainer, ID: "c1", Outcome: engine.OutcomeRemoved}}
	}
	skipped := func(r *engine.PassReport) { r.Skipped = "unchanged since pass #1" }
	forced := func(r *engine.PassReport) { r.Forced = true }
	warned := func(r *engine.PassReport) {
		r.Events = []engine.Event{{Reason: "FreeDiskSpaceFailed", Warning: true}}
	}
	c, i := engine.PassContainers, engine.PassImages
	for _, tc := range []struct {
		name   string
		passes []engine.PassReport
		want   []string // each row's pass number and result
	}{
		{"periodic passes with nothing to do fold into the newest, with a count and the first's start",
			[]engine.PassReport{pass(1, c, nil), pass(2, c, nil), pass(3, c, nil)},
			[]string{"3 nothing to do (×3 since 12:01:00)"}},
		{"skipped passes fold together, never with one that ran and had nothing to do (issue 41: the count hid a pass that ran)",
			[]engine.PassReport{pass(1, c, nil), pass(2, c, skipped), pass(3, c, skipped), pass(4, c, nil)},
			[]string{"4 nothing to do", "3 skipped: node unchanged (×2 since 12:02:00)", "1 nothing to do"}},
		{"a pass that removed something ends the run",
			[]engine.PassReport{pass(1, c, nil), pass(2, c, removed), pass(3, c, nil), pass(4, c, nil)},
			[]string{"4 nothing to do (×2 since 12:03:00)", "2 ok", "1 nothing to do"}},
		{"image passes fold apart from container passes, and between them break neither run",
			[]engine.PassReport{pass(1, c, nil), pass(2, i, nil), pass(3, c, nil), pass(4, c, nil), pass(5, i, nil)},
			[]string{"5 nothing to do (×2 since 12:02:00)", "4 nothing to do (×3 since 12:01:00)"}},
		{"a forced pass keeps its row",
			[]engine.PassReport{pass(1, c, nil), pass(2, c, forced), pass(3, c, nil)},
			[]string{"3 nothing to do", "2 nothing to do", "1 nothing to do"}},
		{"a pass that warned keeps its row",
			[]engine.PassReport{pass(1, i, nil), pass(2, i, warned), pass(3, i, nil)},
			[]string{"3 nothing to do", "2 nothing to do · FreeDiskSpaceFailed", "1 nothing to do"}},
		{"a late pass that removed something keeps its row, though its number is in a folded run",
			[]engine.PassReport{pass(1, c, nil), pass(3, c, nil), pass(2, c, removed)},
			[]string{"3 nothing to do (×2 since 12:01:00)", "2 ok"}},
		{"passes of another run do not fold into this run's",
			[]engine.PassReport{pass(1, c, nil), pass(2, c, func(r *engine.PassReport) { r.Run = "s" })},
			[]string{"2 nothing to do", "1 nothing to do"}},
		{"a run that began on an earlier day says the day",
			[]engine.PassReport{pass(1, c, nil), pass(2000, c, nil)},
			[]string{"2000 nothing to do (×2 since 2026-11-01 12:01:00)"}},
		{"a folded pass seen again (from Apply) is not added again",
			[]engine.PassReport{pass(1, c, nil), pass(2, c, nil), pass(3, c, nil), pass(2, c, nil), pass(3, c, nil)},
			[]string{"3 nothing to do (×3 since 12:01:00)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(keys.Default(false), style.Default(true))
			m.SetSize(120, 30)
			for _, r := range tc.passes {
				m.AddPass(r)
			}
			var got []string
			for _, e := range m.passes {
				row := passRow(e)
				got = append(got, row.Cells[0]+" "+row.Cells[len(row.Cells)-1])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("rows %q\nwant %q", got, tc.want)
			}
		})
	}
	t.Run("a day of an idle node's periodic passes is two rows, and the pass before them stays", func(t *testing.T) {
		m := New(keys.Default(false), style.Default(true))
		m.AddPass(pass(1, c, removed))
		for id := int64(2); id < 2+24*60; id++ {
			kind := c
			if id%5 == 0 {
				kind = i
			}
			m.AddPass(pass(id, kind, skipped))
		}
		if len(m.passes) != 3 || m.passes[2].ID != 1 {
			t.Errorf("%d rows, the oldest #%d; want 3, the oldest #1", len(m.passes), m.passes[len(m.passes)-1].ID)
		}
	})
	t.Run("the cursor stays on a folded row as passes fold into it", func(t *testing.T) {
		m := New(keys.Default(false), style.Default(true))
		m.SetSize(120, 30)
		m.AddPass(pass(1, c, nil))
		m.AddPass(pass(2, c, nil))
		m.AddPass(pass(3, i, nil))
		m.Grid.SetCursor(1)
		m.AddPass(pass(4, c, nil))
		m.AddPass(pass(5, i, removed))
		d, ok := m.Detail()
		if !ok || d.Title != "Pass #4" {
			t.Errorf("the cursor is on %q; want the container passes' row, now Pass #4", d.Title)
		}
	})
	t.Run("the details of a folded row say what it holds", func(t *testing.T) {
		m := New(keys.Default(false), style.Default(true))
		m.SetSize(120, 30)
		for id := int64(1); id <= 4; id++ {
			m.AddPass(pass(id, c, nil))
		}
		d, ok := m.Detail()
		if !ok {
			t.Fatal("no details for the selected row")
		}
		want := "BEFORE    3 earlier periodic passes (containers) since 12:01:00, the first #1, removed nothing either"
		if !slices.ContainsFunc(d.Lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("details %q\nwant a line %q", d.Lines, want)
		}
		if !slices.Contains(d.Lines, "ITEMS     0 planned") {
			t.Errorf("details %q\nwant a line %q", d.Lines, "ITEMS     0 planned")
		}
	})
}

// TestDetailsSayWhyAPassHasNoItems pins the last line of the details of
// a pass with no items: it had nothing to do, or it was skipped, or it
// ended on its error; only the first says nothing was to do.
func TestDetailsSayWhyAPassHasNoItems(t *testing.T) {
	tests := []struct {
		name string
		r    engine.PassReport
		want string
	}{
		{"a pass with nothing planned had nothing to do", engine.PassReport{ID: 1, Kind: engine.PassImages}, "nothing was planned: the pass had nothing to do"},
		{"a skipped pass says it was skipped", engine.PassReport{ID: 2, Kind: engine.PassContainers, Skipped: "unchanged since pass #1"}, "nothing was planned: the pass was skipped (SKIPPED above)"},
		{"a pass that failed says it ended on its error", engine.PassReport{ID: 3, Kind: engine.PassImages, Error: "list images: unavailable"}, "nothing was removed: the pass ended on its error (ERROR above)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(keys.Default(false), style.Default(true))
			m.SetSize(100, 30)
			m, _ = m.Update(feed.Pass{Report: tt.r})
			d, ok := m.Detail()
			if !ok {
				t.Fatal("no details")
			}
			if last := d.Lines[len(d.Lines)-1]; last != tt.want {
				t.Errorf("last line %q, want %q", last, tt.want)
			}
		})
	}
}

// TestTheForcedMarkIsExplained pins issue 41: the * a forced pass's kind
// bears is explained on the pane, at 80 columns too.
func TestTheForcedMarkIsExplained(t *testing.T) {
	m := New(keys.Default(false), style.Default(true))
	m.SetSize(80, 20)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	m.AddPass(engine.PassReport{ID: 1, Run: "r", Kind: engine.PassImages, Forced: true, StartedAt: at, FinishedAt: at})
	v := ansi.Strip(m.View())
	if !strings.Contains(v, "images*") || !strings.Contains(v, "* forced by an operator") {
		t.Errorf("the forced mark is not explained at 80 columns:\n%s", v)
	}
}
