package tui

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
)

// runQuick runs cmd and, through batches, every command it holds, and
// returns their messages but the ticks' (tickMsg, pulseMsg, clockMsg, a
// spinner's), which the program would deliver only after their interval.
// It must run in a synctest bubble in which the model that made cmd was
// built: a tick's timer is then on synctest's clock and fires as soon as
// the bubble has nothing else to do, so no message depends on how fast
// the machine is, and a command that can never answer (a wait on a nil
// channel, or on one made in the bubble that nothing sends on) ends the
// test as a deadlock.
func runQuick(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, runQuick(c)...)
		}
		return out
	case tickMsg, pulseMsg, clockMsg, spinner.TickMsg:
		return nil
	default:
		return []tea.Msg{msg}
	}
}

// inBubble runs a subtest's body in a synctest bubble, as runQuick needs.
func inBubble(f func(t *testing.T)) func(t *testing.T) {
	return func(t *testing.T) { synctest.Test(t, f) }
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

	t.Run("a refresh applied", inBubble(func(t *testing.T) {
		m, n := live(t)
		m, _ = update(m, noticeMsg{n: engine.Notice{Containers: true, Status: m.status}, ok: true})
		if !m.refreshing {
			t.Fatal("a container notice did not list the node")
		}
		msg := refreshCmd(m.ctx, m.o, m.refreshSeq, nil)()
		_, cmd := update(m, msg)
		runQuick(cmd)
		if got := n.Load(); got != 1 {
			t.Errorf("AfterRefresh ran %d times after a refresh; want 1", got)
		}
	}))
	t.Run("a pass that removed nothing: no refresh, released at the first pulse a refresh interval on", inBubble(func(t *testing.T) {
		m, n := live(t)
		now := m.o.Now()
		m.o.Now = func() time.Time { return now }
		// The usage readings spaced out: the pulse is armed for later.
		m.o.ImageFs = func(context.Context) (engine.FsStats, error) { return m.snap.ImageFs, nil }
		m.fsEvery = UsageQuietInterval
		m, _ = update(m, pulseMsg{gen: m.pulseGen})
		if d := m.pulseAt.Sub(now); d <= m.o.RefreshInterval {
			t.Fatalf("the pulse is armed %s ahead with the usage spaced out; want longer", d)
		}
		seq := m.refreshSeq
		m, cmd := update(m, pass(m, false))
		if m.refreshSeq != seq {
			t.Fatal("a pass that removed nothing re-listed the live dashboard")
		}
		runQuick(cmd)
		if got := n.Load(); got != 0 {
			t.Errorf("AfterRefresh ran %d times as the pass's notice came, while the scheduler may still hold its garbage; want 0", got)
		}
		if d := m.pulseAt.Sub(now); d != m.o.RefreshInterval {
			t.Errorf("the pulse that hands the pass's garbage back comes in %s; want %s", d, m.o.RefreshInterval)
		}
		// A pulse sooner than that (the cgroup pane's) hands nothing back.
		now = now.Add(m.o.RefreshInterval / 2)
		m, cmd = update(m, pulseMsg{gen: m.pulseGen})
		runQuick(cmd)
		if got := n.Load(); got != 0 {
			t.Errorf("AfterRefresh ran %d times half a refresh interval after the pass; want 0", got)
		}
		now = m.pulseAt
		m, cmd = update(m, pulseMsg{gen: m.pulseGen})
		runQuick(cmd)
		if got := n.Load(); got != 1 {
			t.Errorf("AfterRefresh ran %d times at the pulse a refresh interval after the pass; want 1", got)
		}
		now = m.pulseAt
		_, cmd = update(m, pulseMsg{gen: m.pulseGen})
		runQuick(cmd)
		if got := n.Load(); got != 1 {
			t.Errorf("AfterRefresh ran %d times by the second pulse after one pass; want 1", got)
		}
	}))
	t.Run("without a pulse, a pass that removed nothing is released at once", inBubble(func(t *testing.T) {
		m, n := live(t)
		m.o.Cgroups, m.o.ImageFs = nil, nil
		_, cmd := update(m, pass(m, false))
		runQuick(cmd)
		if got := n.Load(); got != 1 {
			t.Errorf("AfterRefresh ran %d times after the pass with no pulse armed; want 1", got)
		}
	}))
	t.Run("a pass that removed something: released once its refresh is applied", inBubble(func(t *testing.T) {
		m, n := live(t)
		m, cmd := update(m, pass(m, false, engine.OutcomeRemoved))
		if !m.refreshing {
			t.Fatal("a pass that removed a container did not re-list")
		}
		runQuick(cmd)
		if got := n.Load(); got != 0 {
			t.Errorf("AfterRefresh ran %d times before the pass's refresh was applied; want 0", got)
		}
	}))
	t.Run("a dry run: nothing", inBubble(func(t *testing.T) {
		m, n := live(t)
		_, cmd := update(m, pass(m, true))
		runQuick(cmd)
		if got := n.Load(); got != 0 {
			t.Errorf("AfterRefresh ran %d times after a dry run; want 0", got)
		}
	}))
}
