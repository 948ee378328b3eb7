package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
)

// update sends one message and returns the model and its command.
func update(m Model, msg tea.Msg) (Model, tea.Cmd) {
	nm, cmd := m.Update(msg)
	return nm.(Model), cmd
}

// finishRefresh runs the refresh in flight to its message, as the program
// would.
func finishRefresh(t *testing.T, m Model) Model {
	t.Helper()
	if !m.refreshing {
		t.Fatal("no refresh in flight")
	}
	msg := refreshCmd(m.ctx, m.o, m.refreshSeq, nil)()
	m, _ = update(m, msg)
	return m
}

// streamNotice is the scheduler's notice of the node's containers, with
// the engine's event stream in state st, which the fixture's controller
// then reports too.
func streamNotice(m Model, st engine.EventStream) noticeMsg {
	if c, ok := m.o.Controller.(*fakeController); ok {
		c.mu.Lock()
		c.status.Events = st
		c.mu.Unlock()
	}
	status := m.status
	status.Events = st
	return noticeMsg{n: engine.Notice{Containers: true, Status: status}, ok: true}
}

// liveStream is the engine's event stream, open.
var liveStream = engine.EventStream{Live: true}

func TestRefreshOnContainerEvents(t *testing.T) {
	live := func(t *testing.T) Model {
		m, _ := fixtureModel(t, 100, 30)
		m.o.Events = true
		m, cmd := update(m, streamNotice(m, liveStream))
		if cmd == nil {
			t.Fatal("opening the stream armed nothing")
		}
		if m.refreshing {
			m = finishRefresh(t, m)
		}
		return m
	}
	t.Run("an open stream replaces the short periodic re-list with the safety net", func(t *testing.T) {
		m := live(t)
		if !m.EventsLive() || m.ListInterval() != SafetyInterval {
			t.Fatalf("live %v, re-list every %s; want live and every %s", m.EventsLive(), m.ListInterval(), SafetyInterval)
		}
		seq := m.refreshSeq
		m, cmd := update(m, tickMsg{gen: 0}) // armed at the polling interval before the stream opened
		if cmd != nil || m.refreshSeq != seq {
			t.Errorf("a tick armed at the polling interval still re-listed (cmd %v, seq %d -> %d)", cmd != nil, seq, m.refreshSeq)
		}
	})
	t.Run("a container event re-lists at once, without waiting for a tick", func(t *testing.T) {
		m := live(t)
		seq := m.refreshSeq
		m, cmd := update(m, streamNotice(m, liveStream))
		if cmd == nil || !m.refreshing || m.refreshSeq != seq+1 {
			t.Fatalf("after an event: refreshing %v, seq %d -> %d; want a new refresh", m.refreshing, seq, m.refreshSeq)
		}
	})
	t.Run("events during a refresh give exactly one more refresh after it", func(t *testing.T) {
		m := live(t)
		m, _ = update(m, streamNotice(m, liveStream))
		seq := m.refreshSeq
		m, _ = update(m, streamNotice(m, liveStream))
		m, _ = update(m, streamNotice(m, liveStream))
		if m.refreshSeq != seq {
			t.Fatalf("events during a refresh started %d more at once", m.refreshSeq-seq)
		}
		m = finishRefresh(t, m)
		if !m.refreshing || m.refreshSeq != seq+1 {
			t.Fatalf("after the refresh: refreshing %v, seq %d -> %d; want one more", m.refreshing, seq, m.refreshSeq)
		}
		m = finishRefresh(t, m)
		if m.refreshing {
			t.Error("a third refresh followed one burst")
		}
	})
	t.Run("a runtime without a stream falls back to polling and says so", func(t *testing.T) {
		m, _ := fixtureModel(t, 100, 30)
		m.o.Events = true
		m, _ = update(m, streamNotice(m, engine.EventStream{NoStream: true, Down: fmt.Errorf("container events: %w: Unimplemented", engine.ErrNoEventStream).Error()}))
		if m.EventsLive() || m.ListInterval() != m.o.RefreshInterval {
			t.Errorf("live %v, re-list every %s; want polling every %s", m.EventsLive(), m.ListInterval(), m.o.RefreshInterval)
		}
		if s := m.Screen(); !strings.Contains(s, "events: polling (runtime has no event stream)") {
			t.Errorf("status line does not say it polls:\n%s", s)
		}
	})
	t.Run("a broken stream falls back to polling, re-lists, and reconnects", func(t *testing.T) {
		m := live(t)
		seq := m.refreshSeq
		m, cmd := update(m, streamNotice(m, engine.EventStream{Down: fmt.Errorf("container events: %w", engine.ErrUnavailable).Error()}))
		if cmd == nil || m.EventsLive() || m.ListInterval() != m.o.RefreshInterval || m.refreshSeq != seq+1 {
			t.Fatalf("live %v, every %s, seq %d -> %d; want polling and a re-list", m.EventsLive(), m.ListInterval(), seq, m.refreshSeq)
		}
		if s := m.Screen(); !strings.Contains(s, "reconnecting") {
			t.Errorf("status line does not say it reconnects:\n%s", s)
		}
		// The engine's follower reconnects (engine TestFollowEvents).
	})
}

func TestLiveDashboardListsOnlyOnChange(t *testing.T) {
	live := func(t *testing.T) Model {
		m, _ := fixtureModel(t, 100, 30)
		m.o.Events = true
		m, _ = update(m, streamNotice(m, liveStream))
		if m.refreshing {
			m = finishRefresh(t, m)
		}
		return m
	}
	pass := func(outcomes ...engine.Outcome) noticeMsg {
		r := &engine.PassReport{Kind: engine.PassImages}
		for _, o := range outcomes {
			r.Items = append(r.Items, engine.ItemResult{Kind: engine.ItemImage, Outcome: o})
		}
		return noticeMsg{n: engine.Notice{Report: r}, ok: true}
	}
	tests := []struct {
		name   string
		msg    noticeMsg
		relist bool
	}{
		{"a pass that removed nothing", pass(), false},
		{"a pass whose items were all kept at the re-check", pass(engine.OutcomeSkipped, engine.OutcomeSkipped), false},
		{"a pass that removed an image", pass(engine.OutcomeSkipped, engine.OutcomeRemoved), true},
		{"a pass that found an image gone", pass(engine.OutcomeGone), true},
		{"a pass whose removal failed", pass(engine.OutcomeFailed), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := live(t)
			seq := m.refreshSeq
			tt.msg.n.Status = m.status // every notice carries the status, the stream's too
			m, _ = update(m, tt.msg)
			if got := m.refreshSeq != seq; got != tt.relist {
				t.Errorf("re-listed %v; want %v", got, tt.relist)
			}
			if passesListed(m) == 0 {
				t.Error("the pass is not in the Events pane")
			}
		})
	}
	t.Run("while polling, every pass re-lists", func(t *testing.T) {
		m, _ := fixtureModel(t, 100, 30)
		seq := m.refreshSeq
		m, _ = update(m, pass())
		if m.refreshSeq != seq+1 {
			t.Errorf("seq %d -> %d; want a re-list", seq, m.refreshSeq)
		}
	})
	t.Run("the image fs usage moving re-lists; the same usage does not", func(t *testing.T) {
		m := live(t)
		fs := m.snap.ImageFs
		reads := 0
		m.o.ImageFs = func(context.Context) (engine.FsStats, error) { reads++; return fs, nil }
		m, _ = update(m, pulseMsg{gen: m.pulseGen})
		if !m.fsReading {
			t.Fatal("the pulse did not read the image fs while events are live")
		}
		seq := m.refreshSeq
		m, _ = update(m, fsMsg{fs: fs})
		if m.refreshSeq != seq || m.fsReading {
			t.Fatalf("the same usage: seq %d -> %d, reading %v; want no re-list", seq, m.refreshSeq, m.fsReading)
		}
		moved := fs
		moved.AvailableBytes -= fs.CapacityBytes / 10
		m, _ = update(m, fsMsg{fs: moved})
		if m.refreshSeq != seq+1 {
			t.Errorf("usage moved 10 points: seq %d -> %d; want a re-list", seq, m.refreshSeq)
		}
	})
	t.Run("the safety tick waits out its interval after a list it did not start", func(t *testing.T) {
		m := live(t)
		now := m.at.Add(SafetyInterval / 2)
		m.o.Now = func() time.Time { return now }
		seq := m.refreshSeq
		m, cmd := update(m, tickMsg{gen: m.listGen})
		if m.refreshSeq != seq || cmd == nil {
			t.Fatalf("a tick half an interval after a list: seq %d -> %d, re-armed %v; want no re-list and a new tick", seq, m.refreshSeq, cmd != nil)
		}
		now = m.at.Add(SafetyInterval)
		m, _ = update(m, tickMsg{gen: m.listGen})
		if m.refreshSeq != seq+1 {
			t.Errorf("a tick a whole interval after a list: seq %d -> %d; want a re-list", seq, m.refreshSeq)
		}
	})
	t.Run("while polling, the pulse does not read the image fs", func(t *testing.T) {
		m, _ := fixtureModel(t, 100, 30)
		m.o.ImageFs = func(context.Context) (engine.FsStats, error) { return engine.FsStats{}, nil }
		m, _ = update(m, pulseMsg{gen: m.pulseGen})
		if m.fsReading {
			t.Error("the pulse read the image fs while every list measures it")
		}
	})
}

func TestCgroupTreeClock(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	now := fixedNow
	m.o.Now = func() time.Time { return now }
	at := m.cgAt
	if at.IsZero() {
		t.Fatal("the first snapshot did not read the cgroup tree")
	}
	reads := func(m Model) uint64 { return m.cgSeq }
	pulseAt := func(m Model, d time.Duration) Model {
		now = at.Add(d)
		m, cmd := update(m, pulseMsg{gen: m.pulseGen})
		return runReads(m, cmd)
	}
	n := reads(m)
	m = pulseAt(m, m.o.RefreshInterval)
	if reads(m) != n {
		t.Fatalf("the tree was read %d times at %s with its pane hidden; want 0 before %s", reads(m)-n, m.o.RefreshInterval, CgroupsHiddenInterval)
	}
	m = pulseAt(m, CgroupsHiddenInterval)
	if reads(m) != n+1 {
		t.Fatalf("the tree was read %d times at %s with its pane hidden; want 1", reads(m)-n, CgroupsHiddenInterval)
	}
	at = m.cgAt
	now = at.Add(m.o.RefreshInterval)
	m, cmd := update(m, keyMsg("4"))
	m = runReads(m, cmd)
	if reads(m) != n+2 {
		t.Fatalf("showing the Cgroups pane with a tree %s old read it %d times; want 1", m.o.RefreshInterval, reads(m)-n-1)
	}
	at = m.cgAt
	m = pulseAt(m, m.o.RefreshInterval)
	if reads(m) != n+3 {
		t.Fatalf("with the pane on screen the pulse read the tree %d times; want 1 every %s", reads(m)-n-2, m.o.RefreshInterval)
	}
	m, _ = update(m, keyMsg("f"))
	at = m.cgAt
	m = pulseAt(m, CgroupsHiddenInterval)
	if reads(m) != n+3 {
		t.Error("a frozen display read the cgroup tree")
	}
}

// runReads runs the cgroup read a command batch holds, if any, and
// drops the rest (the pulse's own timer among them).
func runReads(m Model, cmd tea.Cmd) Model {
	if !m.cgReading {
		return m
	}
	m, _ = update(m, cgroupsCmd(m.ctx, m.o.Cgroups, m.cgNames, m.o.Now, m.cgSeq)())
	return m
}

// TestUsageReadingsSpaceOutWhileUnchanged pins the pulse's usage
// readings on an idle node: each reading of the same whole percent as
// the shown plan doubles the wait for the next, from RefreshInterval up
// to the kubelet eviction manager's 10 s (UsageQuietInterval), and the
// pulse sleeps until it is due; a moved usage brings the wait back to
// RefreshInterval; with the Cgroups pane on screen the pulse keeps
// RefreshInterval for the tree.
func TestUsageReadingsSpaceOutWhileUnchanged(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	now := fixedNow
	m.o.Now = func() time.Time { return now }
	m.o.Events = true
	m, _ = update(m, streamNotice(m, liveStream))
	if m.refreshing {
		m = finishRefresh(t, m)
	}
	fs := m.snap.ImageFs
	m.o.ImageFs = func(context.Context) (engine.FsStats, error) { return fs, nil }
	var at []time.Duration // when each reading began, from the start
	pulses := 0
	m.pulseAt = now.Add(m.o.RefreshInterval) // as Init arms the first
	// idle runs the pulses for d, answering each reading with fs and
	// reading the cgroup tree when the pulse asks.
	idle := func(m Model, d time.Duration) Model {
		end := now.Add(d)
		for {
			// The pulse comes when it was armed, read and answered at
			// once.
			if m.pulseAt.After(end) {
				return m
			}
			now = m.pulseAt
			reading := m.fsReading
			pulses++
			var cmd tea.Cmd
			m, cmd = update(m, pulseMsg{gen: m.pulseGen})
			m = runReads(m, cmd)
			if !reading && m.fsReading {
				at = append(at, now.Sub(fixedNow))
				m, _ = update(m, fsMsg{fs: fs})
			}
		}
	}
	m = idle(m, time.Minute)
	want := []time.Duration{2, 6, 14, 24, 34, 44, 54} // waits of 2, 4, 8, then 10 s
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(at, want) {
		t.Fatalf("readings on an unchanged node at %v; want %v", at, want)
	}
	// 7 readings and 2 cgroup reads (every CgroupsHiddenInterval), where
	// a pulse every RefreshInterval would wake 30 times.
	if pulses > 10 {
		t.Errorf("%d pulses in a minute on an idle node; want at most 10", pulses)
	}

	// An image pulled with no container event: the usage moves a point.
	fs.AvailableBytes -= fs.CapacityBytes / 100
	now = m.pulseAt
	m, _ = update(m, pulseMsg{gen: m.pulseGen})
	seq := m.refreshSeq
	m, _ = update(m, fsMsg{fs: fs})
	if m.refreshSeq != seq+1 {
		t.Fatalf("a moved usage: seq %d -> %d; want a re-list", seq, m.refreshSeq)
	}
	if got := m.usageEvery(); got != m.o.RefreshInterval {
		t.Errorf("after a moved usage the next reading waits %s; want %s", got, m.o.RefreshInterval)
	}

	// The Cgroups pane on screen: the pulse keeps RefreshInterval, and
	// bringing it on screen re-arms a pulse armed for later.
	m = finishRefresh(t, m)
	m.fsEvery = UsageQuietInterval
	now = m.pulseAt
	m, _ = update(m, pulseMsg{gen: m.pulseGen})
	if m.pulseAt.Sub(now) <= m.o.RefreshInterval {
		t.Fatalf("the pulse is armed %s ahead with the usage spaced out; want longer", m.pulseAt.Sub(now))
	}
	gen := m.pulseGen
	m, _ = update(m, keyMsg("4"))
	if m.pulseGen == gen || m.pulseAt.Sub(now) != m.o.RefreshInterval {
		t.Errorf("the Cgroups pane on screen: pulse gen %d -> %d, armed %s ahead; want re-armed %s ahead", gen, m.pulseGen, m.pulseAt.Sub(now), m.o.RefreshInterval)
	}
}
