package events

import (
	"testing"

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
