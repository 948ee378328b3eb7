package tui

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
)

// fakeChanged is a light poll that answers changed (or err) and counts
// its calls.
type fakeChanged struct {
	changed bool
	err     error
	calls   int
}

func (f *fakeChanged) Changed(context.Context, uint64) (bool, error) {
	f.calls++
	return f.changed, f.err
}

// pollingModel is the dashboard over the fixture node, polling (no event
// stream) with the light poll f, after its first refresh; the clock
// reads *now.
func pollingModel(t *testing.T, f *fakeChanged, now *time.Time) Model {
	t.Helper()
	o := fixtureOptions(newFakeController(fixtureSnapshot(), engine.DefaultPolicy()), now)
	o.Changed = f.Changed
	m := send(New(o), windowSize(100, 30))
	return refreshNow(t, m)
}

// tickOnce fires the periodic re-list and, when it asked the light poll,
// feeds its answer back, as the program would.
func tickOnce(t *testing.T, m Model) Model {
	t.Helper()
	m, _ = update(m, tickMsg{gen: m.listGen})
	if m.checking {
		m, _ = update(m, changedCmd(m.ctx, m.o.Changed, m.snapFP, m.o.Now, m.checkSeq)())
	}
	return m
}

// dataAge is the header's "as of" mark on data older than the refresh interval.
var dataAge = regexp.MustCompile(`as of \d\d:\d\d:\d\d`)

// Issue 10: while polling, the tick asks the light poll and refreshes in
// full only on a change, or every SafetyInterval.
func TestLightPoll(t *testing.T) {
	t.Run("no change: no full refresh, and the data counts as fresh", func(t *testing.T) {
		now := fixedNow
		f := &fakeChanged{}
		m := pollingModel(t, f, &now)
		seq := m.refreshSeq
		for range 5 {
			now = now.Add(m.o.RefreshInterval)
			m = tickOnce(t, m)
		}
		if f.calls != 5 || m.refreshSeq != seq || m.refreshing {
			t.Errorf("5 ticks: %d light polls, seq %d -> %d, refreshing %v; want 5 polls and no refresh", f.calls, seq, m.refreshSeq, m.refreshing)
		}
		if s := ansi.Strip(m.Screen()); dataAge.MatchString(s) {
			t.Errorf("the header calls data old that the light poll found current:\n%s", s)
		}
	})
	t.Run("a change: one full refresh", func(t *testing.T) {
		now := fixedNow
		f := &fakeChanged{changed: true}
		m := pollingModel(t, f, &now)
		seq := m.refreshSeq
		now = now.Add(m.o.RefreshInterval)
		m = tickOnce(t, m)
		if !m.refreshing || m.refreshSeq != seq+1 {
			t.Fatalf("after a change: refreshing %v, seq %d -> %d; want one refresh", m.refreshing, seq, m.refreshSeq)
		}
		m = finishRefresh(t, m)
		if m.refreshing || m.refreshSeq != seq+1 {
			t.Errorf("after the refresh: refreshing %v, seq %d; want exactly one", m.refreshing, m.refreshSeq)
		}
	})
	t.Run("a failed light poll refreshes in full, which reports the runtime", func(t *testing.T) {
		now := fixedNow
		f := &fakeChanged{err: errors.New("list containers: unavailable")}
		m := pollingModel(t, f, &now)
		seq := m.refreshSeq
		now = now.Add(m.o.RefreshInterval)
		m = tickOnce(t, m)
		if !m.refreshing || m.refreshSeq != seq+1 {
			t.Errorf("after a failed poll: refreshing %v, seq %d -> %d; want a refresh", m.refreshing, seq, m.refreshSeq)
		}
	})
	t.Run("the safety net refreshes in full every SafetyInterval", func(t *testing.T) {
		now := fixedNow
		f := &fakeChanged{}
		m := pollingModel(t, f, &now)
		seq := m.refreshSeq
		now = now.Add(SafetyInterval)
		m = tickOnce(t, m)
		if !m.refreshing || m.refreshSeq != seq+1 || f.calls != 0 {
			t.Errorf("SafetyInterval after a refresh: refreshing %v, seq %d -> %d, %d light polls; want a full refresh", m.refreshing, seq, m.refreshSeq, f.calls)
		}
	})
	t.Run("a light poll that never answers does not hold the safety net back", func(t *testing.T) {
		now := fixedNow
		f := &fakeChanged{}
		m := pollingModel(t, f, &now)
		m, _ = update(m, tickMsg{gen: m.listGen}) // a check goes out and hangs
		if !m.checking {
			t.Fatal("the tick asked no light poll")
		}
		hung := m.checkSeq
		seq := m.refreshSeq
		now = now.Add(SafetyInterval)
		m, _ = update(m, tickMsg{gen: m.listGen})
		if !m.refreshing || m.refreshSeq != seq+1 {
			t.Fatalf("SafetyInterval with a hung check: refreshing %v, seq %d -> %d; want a full refresh", m.refreshing, seq, m.refreshSeq)
		}
		// The hung check's late answer changes nothing.
		m, _ = update(m, changedMsg{seq: hung, changed: true})
		if m.refreshSeq != seq+1 {
			t.Errorf("a late answer of the hung check started another refresh")
		}
	})
	t.Run("the pulse reads the image fs usage while polling, and a moved usage refreshes", func(t *testing.T) {
		now := fixedNow
		f := &fakeChanged{}
		m := pollingModel(t, f, &now)
		m.o.ImageFs = func(context.Context) (engine.FsStats, error) { return engine.FsStats{}, nil }
		m, _ = update(m, pulseMsg{gen: m.pulseGen})
		if !m.fsReading {
			t.Fatal("the pulse did not read the image fs usage while polling")
		}
		seq := m.refreshSeq
		fs := fixtureSnapshot().ImageFs
		fs.AvailableBytes -= 1 << 30 // an image pulled: the usage moved
		m, _ = update(m, fsMsg{fs: fs})
		if !m.refreshing || m.refreshSeq != seq+1 {
			t.Errorf("a moved usage: refreshing %v, seq %d -> %d; want a refresh", m.refreshing, seq, m.refreshSeq)
		}
	})
	t.Run("without a light poll every tick refreshes in full", func(t *testing.T) {
		now := fixedNow
		m := pollingModel(t, &fakeChanged{}, &now)
		m.o.Changed = nil
		seq := m.refreshSeq
		now = now.Add(m.o.RefreshInterval)
		m = tickOnce(t, m)
		if !m.refreshing || m.refreshSeq != seq+1 {
			t.Errorf("seq %d -> %d; want a refresh", seq, m.refreshSeq)
		}
	})
}
