package tui

import (
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
)

// runQuick runs cmd and, through batches, every command it holds, each on
// its own goroutine, waiting for each at most d (a tick or a wait on a
// channel stays behind); it returns the messages that came in time.
func runQuick(cmd tea.Cmd, d time.Duration) []tea.Msg {
	if cmd == nil {
		return nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		if b, ok := msg.(tea.BatchMsg); ok {
			var out []tea.Msg
			for _, c := range b {
				out = append(out, runQuick(c, d)...)
			}
			return out
		}
		return []tea.Msg{msg}
	case <-time.After(d):
		return nil
	}
}

// TestReleaseAfterPass pins when the dashboard hands its garbage back
// (Options.AfterRefresh): after a refresh is applied, and after a real
// pass that no refresh follows, whose own listing and plan are garbage
// then; never for a dry run.
func TestReleaseAfterPass(t *testing.T) {
	live := func(t *testing.T) (Model, *atomic.Int32) {
		m, _ := fixtureModel(t, 100, 30)
		var n atomic.Int32
		m.o.AfterRefresh = func() { n.Add(1) }
		m.o.Events = true
		m, _ = update(m, streamNotice(m, liveStream))
		if m.refreshing {
			m = finishRefresh(t, m)
		}
		n.Store(0)
		return m, &n
	}
	closed := make(chan engine.Notice)
	close(closed)
	pass := func(m Model, dry bool, outcomes ...engine.Outcome) noticeMsg {
		r := &engine.PassReport{Kind: engine.PassContainers, DryRun: dry}
		for _, o := range outcomes {
			r.Items = append(r.Items, engine.ItemResult{Kind: engine.ItemContainer, Outcome: o})
		}
		return noticeMsg{n: engine.Notice{Report: r, Status: m.status}, ch: closed, ok: true}
	}

	t.Run("a refresh applied", func(t *testing.T) {
		m, n := live(t)
		m, _ = update(m, noticeMsg{n: engine.Notice{Containers: true, Status: m.status}, ok: true})
		if !m.refreshing {
			t.Fatal("a container notice did not list the node")
		}
		msg := refreshCmd(m.ctx, m.o, m.refreshSeq, nil)()
		_, cmd := update(m, msg)
		runQuick(cmd, time.Second)
		if got := n.Load(); got != 1 {
			t.Errorf("AfterRefresh ran %d times after a refresh; want 1", got)
		}
	})
	t.Run("a pass that removed nothing: no refresh, released", func(t *testing.T) {
		m, n := live(t)
		seq := m.refreshSeq
		m, cmd := update(m, pass(m, false))
		if m.refreshSeq != seq {
			t.Fatal("a pass that removed nothing re-listed the live dashboard")
		}
		runQuick(cmd, time.Second)
		if got := n.Load(); got != 1 {
			t.Errorf("AfterRefresh ran %d times after the pass; want 1", got)
		}
	})
	t.Run("a pass that removed something: released once its refresh is applied", func(t *testing.T) {
		m, n := live(t)
		m, cmd := update(m, pass(m, false, engine.OutcomeRemoved))
		if !m.refreshing {
			t.Fatal("a pass that removed a container did not re-list")
		}
		runQuick(cmd, time.Second)
		if got := n.Load(); got != 0 {
			t.Errorf("AfterRefresh ran %d times before the pass's refresh was applied; want 0", got)
		}
	})
	t.Run("a dry run: nothing", func(t *testing.T) {
		m, n := live(t)
		_, cmd := update(m, pass(m, true))
		runQuick(cmd, time.Second)
		if got := n.Load(); got != 0 {
			t.Errorf("AfterRefresh ran %d times after a dry run; want 0", got)
		}
	})
}

// TestEventsPaneKeepsWhatItShows pins what the Events pane keeps of a
// pass: its items, its events and the plan's removals, which its rows and
// details show (an item's name comes from the plan's removal), but not the
// plan's account of every image it kept, which nothing there shows.
func TestEventsPaneKeepsWhatItShows(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	r := &engine.PassReport{ID: 3, Kind: engine.PassImages}
	r.Plan.ImageGC.Remove = []engine.ImageRemoval{{ID: "sha256:aaa", RepoTags: []string{"busybox:1"}}}
	r.Plan.ImageGC.Keep = []engine.ImageKeep{{ID: "sha256:bbb", Reason: engine.KeepTooYoung}}
	r.Plan.ImageGC.Order = []string{"sha256:aaa", "sha256:bbb"}
	r.Items = []engine.ItemResult{{Kind: engine.ItemImage, ID: "sha256:aaa", Outcome: engine.OutcomeRemoved}}
	r.Events = []engine.Event{{Reason: "FreeDiskSpaceFailed", Warning: true}}
	m, _ = update(m, noticeMsg{n: engine.Notice{Report: r, Status: m.status}, ok: true})
	ps := passes(m)
	if len(ps) != 1 {
		t.Fatalf("the pane keeps %d passes; want 1", len(ps))
	}
	p := ps[0]
	if p.ID != 3 || len(p.Items) != 1 || len(p.Events) != 1 || len(p.Plan.ImageGC.Remove) != 1 {
		t.Errorf("the pane lost what it shows of the pass: %+v", p)
	}
	if p.Plan.ImageGC.Keep != nil || p.Plan.ImageGC.Order != nil {
		t.Errorf("the pane keeps the plan's kept images (%d) and order (%d); want neither", len(p.Plan.ImageGC.Keep), len(p.Plan.ImageGC.Order))
	}
	if len(r.Plan.ImageGC.Keep) != 1 {
		t.Error("the published report itself was changed")
	}
}
