package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/metrics"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func fixture() []fleet.Node {
	measured := int64(3 << 30)
	return []fleet.Node{
		{Name: "node-a", Ready: true, State: fleet.OK, Summary: &metrics.Summary{
			Node: "node-a", UsagePercent: 91, High: 85, Low: 80, DeadContainers: 7,
			LastAttempt: &metrics.SummaryAttempt{At: now.Add(-90 * time.Second), Result: "success", Reason: "threshold", Freed: 1 << 30, Measured: &measured},
			Kept:        map[engine.ImageKeepReason]int{engine.KeepInUse: 4, engine.KeepPinned: 1},
			PodSource:   "synced", EventStream: "live"}},
		{Name: "node-b", Ready: true, State: fleet.NoAnswer, Err: "no answer within 2s"},
		{Name: "node-c", Ready: false, State: fleet.NoAgent},
		{Name: "node-d", Ready: true, State: fleet.OK, Summary: &metrics.Summary{
			Node: "node-d", UsagePercent: 40, High: 85, Low: 80, DeadContainers: 0, PodSource: "synced", EventStream: "live"}},
	}
}

func loaded(t *testing.T) Model {
	t.Helper()
	m := New(Options{Now: func() time.Time { return now }})
	var tm tea.Model = m
	tm, _ = tm.Update(tea.WindowSizeMsg{Width: 160, Height: 20})
	tm, _ = tm.Update(ReadMsg{Seq: 1, Nodes: fixture(), At: now, Took: 40 * time.Millisecond})
	return tm.(Model)
}

func press(m Model, keys ...string) (Model, tea.Cmd) {
	var tm tea.Model = m
	var cmd tea.Cmd
	for _, k := range keys {
		msg := tea.KeyPressMsg{Text: k, Code: []rune(k)[0]}
		if k == "enter" {
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		}
		tm, cmd = tm.Update(msg)
	}
	return tm.(Model), cmd
}

// rowOrder is the node names in the order the table shows them.
func rowOrder(m Model) []string {
	var out []string
	for _, r := range m.Grid.Rows() {
		out = append(out, r.Key)
	}
	return out
}

func TestFleetView(t *testing.T) {
	t.Run("a row shows the image fs against its band, the last pass, dead containers, kept by reason, pod source and stream", func(t *testing.T) {
		screen := loaded(t).Screen()
		for _, want := range []string{"4 nodes", "2 agents answer", "1 above high", "1 no answer", "1 no agent",
			"91%", "85/80", "1m30s", "success threshold", "3.0 GiB", "use 4 pinned 1", "synced", "live", "no answer within 2s", "node-c (NotReady)"} {
			if !strings.Contains(screen, want) {
				t.Errorf("screen lacks %q:\n%s", want, screen)
			}
		}
	})
	t.Run("the default order puts the nodes that need a look first", func(t *testing.T) {
		if got := strings.Join(rowOrder(loaded(t)), " "); got != "node-b node-a node-d node-c" {
			t.Errorf("order %s", got)
		}
	})
	t.Run("s sorts by name, S reverses", func(t *testing.T) {
		m, _ := press(loaded(t), "s")
		if got := strings.Join(rowOrder(m), " "); got != "node-a node-b node-c node-d" {
			t.Errorf("by name: %s", got)
		}
		m, _ = press(m, "S")
		if got := strings.Join(rowOrder(m), " "); got != "node-d node-c node-b node-a" {
			t.Errorf("reversed: %s", got)
		}
	})
	t.Run("/ filters the rows", func(t *testing.T) {
		m, _ := press(loaded(t), "/", "n", "o", " ", "a", "n", "s")
		if got := strings.Join(rowOrder(m), " "); got != "node-b" {
			t.Errorf("filter 'no ans': %s", got)
		}
	})
	t.Run("enter names the selected node and quits, for its dashboard", func(t *testing.T) {
		m, _ := press(loaded(t), "j")
		m, cmd := press(m, "enter")
		if m.Enter != "node-a" || cmd == nil {
			t.Fatalf("enter: %q, cmd %v", m.Enter, cmd)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("enter does not quit")
		}
	})
	t.Run("a read that fails keeps the last rows and says why", func(t *testing.T) {
		var tm tea.Model = loaded(t)
		tm, _ = tm.Update(tickMsg{seq: 1})
		tm, _ = tm.Update(ReadMsg{Seq: 2, Err: errString("list nodes: connection refused"), At: now})
		m := tm.(Model)
		if screen := m.Screen(); !strings.Contains(screen, "connection refused") || !strings.Contains(screen, "node-a") {
			t.Errorf("screen:\n%s", screen)
		}
	})
	t.Run("a read made before the program is its first frame", func(t *testing.T) {
		m := New(Options{Now: func() time.Time { return now }, Initial: fixture(), InitialAt: now, Cursor: "node-d"})
		if got := len(m.Grid.Rows()); got != 4 {
			t.Fatalf("%d rows, want 4", got)
		}
		if r, ok := m.Grid.Selected(); !ok || r.Key != "node-d" {
			t.Errorf("cursor on %q, want node-d", r.Key)
		}
	})
	t.Run("a late read of an earlier refresh is dropped", func(t *testing.T) {
		var tm tea.Model = loaded(t)
		tm, _ = tm.Update(tickMsg{seq: 1})
		tm, _ = tm.Update(ReadMsg{Seq: 1, Nodes: fixture()[:1], At: now})
		if got := len(tm.(Model).Grid.Rows()); got != 4 {
			t.Errorf("%d rows after a stale read, want 4", got)
		}
	})
}

type errString string

func (e errString) Error() string { return string(e) }

func TestStringsFromTheClusterReachTheTerminalEscaped(t *testing.T) {
	const evil = "\rnode-x \x1b[31mFAKE 3 synced\x1b]0;owned\x07\b"
	nodes := []fleet.Node{
		{Name: "node" + evil, Ready: true, State: fleet.Failed, Err: "agent says" + evil, Pod: "p", Namespace: "nodegc"},
		{Name: "node-s", Ready: true, State: fleet.OK, Summary: &metrics.Summary{UsagePercent: 40, High: 85, Low: 80,
			PodSource: "synced" + evil, EventStream: "live" + evil,
			LastAttempt: &metrics.SummaryAttempt{At: now, Result: "success" + evil, Reason: "threshold" + evil},
			Kept:        map[engine.ImageKeepReason]int{engine.ImageKeepReason("in-use" + evil): 1}}},
	}
	for _, tc := range []struct {
		name  string
		model func() Model
	}{
		{"in the table", func() Model {
			m := New(Options{Now: func() time.Time { return now }})
			var tm tea.Model = m
			tm, _ = tm.Update(tea.WindowSizeMsg{Width: 400, Height: 20})
			tm, _ = tm.Update(ReadMsg{Seq: 1, Nodes: nodes, At: now})
			return tm.(Model)
		}},
		{"in a failed read's line", func() Model {
			m := New(Options{Now: func() time.Time { return now }})
			var tm tea.Model = m
			tm, _ = tm.Update(tea.WindowSizeMsg{Width: 400, Height: 20})
			tm, _ = tm.Update(ReadMsg{Seq: 1, Err: errors.New("list nodes:" + evil), At: now})
			return tm.(Model)
		}},
		{"in the flash", func() Model {
			m := New(Options{Now: func() time.Time { return now }, Flash: "nodegc: node x:" + evil, Initial: nodes[:1]})
			var tm tea.Model = m
			tm, _ = tm.Update(tea.WindowSizeMsg{Width: 400, Height: 20})
			return tm.(Model)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			screen := tc.model().Screen()
			for _, raw := range []string{"\r", "\x1b[31mFAKE", "\x1b]0;", "\x07", "\b"} {
				if strings.Contains(screen, raw) {
					t.Errorf("the screen holds %q from the cluster:\n%q", raw, screen)
				}
			}
			if !strings.Contains(screen, `\x1b[31mFAKE`) {
				t.Errorf("the screen does not show the escaped text:\n%s", screen)
			}
		})
	}
}
