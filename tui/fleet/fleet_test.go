package fleet

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/fleet"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func fixture() []fleet.Node {
	beat := metav1.NewTime(now.Add(-time.Minute))
	return []fleet.Node{
		{Name: "node-a", State: fleet.OK, Status: &v1alpha1.NodeGCStatus{HeartbeatTime: &beat,
			ImageFs: &v1alpha1.ImageFs{UsagePercent: 91}, Band: v1alpha1.Band{High: 85, Low: 80}, DeadContainers: ptr(int32(7)),
			LastImagePass: &v1alpha1.Pass{At: metav1.NewTime(now.Add(-90 * time.Second)), Kind: "images", Trigger: "periodic", Result: "success", Reason: "threshold",
				Removed: 2, TargetBytes: 1 << 30, FreedBytes: 1 << 30, MeasuredBytes: ptr(int64(3 << 30))},
			Paused:    &v1alpha1.Pause{Since: metav1.NewTime(now.Add(-10 * time.Minute)), By: "alice", Until: ptr(metav1.NewTime(now.Add(50 * time.Minute)))},
			Command:   &v1alpha1.CommandOutcome{ID: "c1", Result: "done", Message: "2 removed", At: metav1.NewTime(now.Add(-30 * time.Second))},
			Kept:      map[string]int32{"in-use": 4, "pinned": 1},
			PodSource: "synced", EventStream: "live"}},
		{Name: "node-b", State: fleet.Stale, Err: "no heartbeat since 2026-11-25T11:40:00Z", Status: &v1alpha1.NodeGCStatus{HeartbeatTime: &beat}},
		{Name: "node-c", State: fleet.NoAgent},
		{Name: "node-d", State: fleet.OK, Status: &v1alpha1.NodeGCStatus{HeartbeatTime: &beat,
			ImageFs: &v1alpha1.ImageFs{UsagePercent: 40}, Band: v1alpha1.Band{High: 85, Low: 80}, DeadContainers: ptr(int32(0)), PodSource: "synced", EventStream: "live"}},
	}
}

// source is a fleet kept in memory.
type source struct {
	nodes   []fleet.Node
	health  []fleet.Health
	changed chan struct{}
}

func (s *source) Rows(time.Time) []fleet.Node { return s.nodes }
func (s *source) Health() []fleet.Health      { return s.health }
func (s *source) Changed() <-chan struct{}    { return s.changed }
func newSource(nodes []fleet.Node) *source {
	return &source{nodes: nodes, changed: make(chan struct{}, 1)}
}

func loaded(t *testing.T) Model {
	t.Helper()
	m := New(Options{Now: func() time.Time { return now }, Source: newSource(fixture())})
	var tm tea.Model = m
	tm, _ = tm.Update(tea.WindowSizeMsg{Width: 190, Height: 20})
	tm, _ = tm.Update(ReadMsg{Nodes: fixture(), At: now})
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
		for _, want := range []string{"4 nodes", "2 agents ok", "1 above high", "1 stale", "1 no agent",
			"91%", "85/80", "1m30s", "success threshold", "3.0 GiB", "use 4 pinned 1", "synced", "live", "no heartbeat since", "1m0s ago"} {
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
		m, _ := press(loaded(t), "/", "s", "t", "a", "l")
		if got := strings.Join(rowOrder(m), " "); got != "node-b" {
			t.Errorf("filter 'stal': %s", got)
		}
	})
	t.Run("enter opens the node's view from its object, which follows the watch; q comes back", func(t *testing.T) {
		m, _ := press(loaded(t), "j")
		m, cmd := press(m, "enter")
		if cmd != nil {
			t.Fatalf("enter returned a command: it sends nothing anywhere")
		}
		screen := m.Screen()
		for _, want := range []string{"nodegc fleet › node-a", "Heartbeat", "1m0s ago", "91% used", "high 85% · low 80%", "at or above high",
			"1m30s ago · images (periodic) · success threshold · removed 2, failed 0 · freed 1.0 GiB (measured 3.0 GiB)", "Dead containers", "7",
			"since 11:50:00 by alice · ends 12:50:00", "c1: done 30s ago · 2 removed"} {
			if !strings.Contains(screen, want) {
				t.Errorf("node view lacks %q:\n%s", want, screen)
			}
		}
		nodes := fixture()
		*nodes[0].Status.DeadContainers = 4242
		var tm tea.Model = m
		tm, _ = tm.Update(ReadMsg{Nodes: nodes, At: now})
		if screen := tm.(Model).Screen(); !strings.Contains(screen, "4242") {
			t.Errorf("the node view did not follow the watch:\n%s", screen)
		}
		m, cmd = press(tm.(Model), "q")
		if cmd != nil || !strings.Contains(m.Screen(), "4 nodes") {
			t.Errorf("q in the node view: cmd %v, screen:\n%s", cmd, m.Screen())
		}
	})
	t.Run("a node named at start opens its view", func(t *testing.T) {
		var tm tea.Model = New(Options{Now: func() time.Time { return now }, Node: "node-d"})
		tm, _ = tm.Update(tea.WindowSizeMsg{Width: 160, Height: 30})
		tm, _ = tm.Update(ReadMsg{Nodes: fixture(), At: now})
		if screen := tm.(Model).Screen(); !strings.Contains(screen, "nodegc fleet › node-d") || !strings.Contains(screen, "40% used") {
			t.Errorf("screen:\n%s", screen)
		}
	})
	t.Run("a broken watch is on the status line until it resumes, then for a minute", func(t *testing.T) {
		var tm tea.Model = loaded(t)
		broke := now.Add(-10 * time.Second)
		tm, _ = tm.Update(ReadMsg{Nodes: fixture(), At: now, Health: []fleet.Health{{Resource: "nodes"},
			{Resource: "nodegcs.nodegc.io", Err: errString("watch nodegcs.nodegc.io: connection refused"), BrokeAt: broke}}})
		if screen := tm.(Model).Screen(); !strings.Contains(screen, "watch of nodegcs.nodegc.io broken since 11:59:50, resuming: watch nodegcs.nodegc.io: connection refused") || !strings.Contains(screen, "node-a") {
			t.Errorf("broken:\n%s", screen)
		}
		resumed := []fleet.Health{{Resource: "nodes"}, {Resource: "nodegcs.nodegc.io", BrokeAt: broke, ResumedAt: now}}
		tm, _ = tm.Update(ReadMsg{Nodes: fixture(), At: now.Add(59 * time.Second), Health: resumed})
		if screen := tm.(Model).Screen(); !strings.Contains(screen, "watch resumed 12:00:00 (broken 11:59:50)") {
			t.Errorf("resumed:\n%s", screen)
		}
		tm, _ = tm.Update(ReadMsg{Nodes: fixture(), At: now.Add(61 * time.Second), Health: resumed})
		if screen := tm.(Model).Screen(); strings.Contains(screen, "watch") && !strings.Contains(screen, "watching") || strings.Contains(screen, "resumed") {
			t.Errorf("a minute after it resumed:\n%s", screen)
		}
	})
	t.Run("a change on the watch is read at once, and the wait armed again", func(t *testing.T) {
		src := newSource(fixture())
		m := New(Options{Now: func() time.Time { return now }, Source: src, Refresh: time.Hour})
		src.nodes = fixture()[:1]
		src.changed <- struct{}{}
		msg := m.waitCmd()()
		rm, ok := msg.(ReadMsg)
		if !ok || len(rm.Nodes) != 1 || !rm.Wait {
			t.Fatalf("after a change: %#v", msg)
		}
		if _, cmd := m.Update(rm); cmd == nil {
			t.Errorf("no wait armed after a change")
		}
	})
}

type errString string

func (e errString) Error() string { return string(e) }

func TestStringsFromTheClusterReachTheTerminalEscaped(t *testing.T) {
	const evil = "\rnode-x \x1b[31mFAKE 3 synced\x1b]0;owned\x07\b"
	beat := metav1.NewTime(now)
	nodes := []fleet.Node{
		{Name: "node" + evil, State: fleet.Failed, Err: "agent says" + evil},
		{Name: "node-s", State: fleet.OK, Status: &v1alpha1.NodeGCStatus{HeartbeatTime: &beat, ImageFs: &v1alpha1.ImageFs{UsagePercent: 40}, Band: v1alpha1.Band{High: 85, Low: 80},
			PodSource: "synced" + evil, EventStream: "live" + evil,
			LastImagePass: &v1alpha1.Pass{At: beat, Result: "success" + evil, Reason: "threshold" + evil},
			Kept:          map[string]int32{"in-use" + evil: 1}}},
	}
	for _, tc := range []struct {
		name  string
		model func() Model
	}{
		{"in the table", func() Model {
			m := New(Options{Now: func() time.Time { return now }})
			var tm tea.Model = m
			tm, _ = tm.Update(tea.WindowSizeMsg{Width: 400, Height: 20})
			tm, _ = tm.Update(ReadMsg{Nodes: nodes, At: now})
			return tm.(Model)
		}},
		{"in a broken watch's line", func() Model {
			m := New(Options{Now: func() time.Time { return now }})
			var tm tea.Model = m
			tm, _ = tm.Update(tea.WindowSizeMsg{Width: 400, Height: 20})
			tm, _ = tm.Update(ReadMsg{Nodes: nodes[:1], At: now, Health: []fleet.Health{{Resource: "nodes", Err: errors.New("list nodes:" + evil), BrokeAt: now}}})
			return tm.(Model)
		}},
		{"in the node view (kubectl nodegc NODE), every string of the object", func() Model {
			dead := int32(2)
			st := *nodes[1].Status
			st.Version = "v1" + evil
			st.Paused = &v1alpha1.Pause{Since: beat, By: "alice" + evil}
			st.Command = &v1alpha1.CommandOutcome{ID: "c1" + evil, Result: "done" + evil, Message: "ok" + evil, At: beat}
			st.LastContainerPass = &v1alpha1.Pass{At: beat, Kind: "containers" + evil, Trigger: "periodic" + evil, Result: "success" + evil}
			st.DeadContainers = &dead
			open := fleet.Node{Name: "node" + evil, State: fleet.OK, Status: &st}
			m := New(Options{Now: func() time.Time { return now }, Node: open.Name})
			var tm tea.Model = m
			tm, _ = tm.Update(tea.WindowSizeMsg{Width: 2000, Height: 40})
			tm, _ = tm.Update(ReadMsg{Nodes: []fleet.Node{open}, At: now})
			return tm.(Model)
		}},
		{"in the flash", func() Model {
			m := New(Options{Now: func() time.Time { return now }, Flash: "nodegc: node x:" + evil})
			var tm tea.Model = m
			tm, _ = tm.Update(tea.WindowSizeMsg{Width: 400, Height: 20})
			tm, _ = tm.Update(ReadMsg{Nodes: nodes[:1], At: now})
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

// TestFleetPressureColumn: the PRESSURE column says how soon each node is
// forecast to reach DiskPressure that no GC prevents; its sort puts the
// soonest first, not filling and not enough history after, and no
// forecast last; a node within the warning horizon is counted and
// flagged, and its view gives the interval.
func TestFleetPressureColumn(t *testing.T) {
	nodes := fixture()
	at := func(d time.Duration) *metav1.Time { return ptr(metav1.NewTime(now.Add(d))) }
	nodes[0].Status.Forecast = &v1alpha1.Forecast{Status: "not-filling"}
	nodes[1].Status.Forecast = &v1alpha1.Forecast{Status: "filling", At: at(26 * time.Hour), Earliest: at(20 * time.Hour)}
	nodes[3].Status.Forecast = &v1alpha1.Forecast{Status: "filling", At: at(3*time.Hour + 10*time.Minute), Earliest: at(2*time.Hour + 50*time.Minute), Latest: at(3*time.Hour + 40*time.Minute)}
	nodes = append(nodes, fleet.Node{Name: "node-e", State: fleet.OK, Status: &v1alpha1.NodeGCStatus{HeartbeatTime: nodes[0].Status.HeartbeatTime,
		Forecast: &v1alpha1.Forecast{Status: "not-enough-history"}}},
		fleet.Node{Name: "node-f", State: fleet.OK, Status: &v1alpha1.NodeGCStatus{HeartbeatTime: nodes[0].Status.HeartbeatTime,
			Forecast: &v1alpha1.Forecast{Status: "filling"}}}) // more than a year away
	var tm tea.Model = New(Options{Now: func() time.Time { return now }})
	tm, _ = tm.Update(tea.WindowSizeMsg{Width: 200, Height: 20})
	tm, _ = tm.Update(ReadMsg{Nodes: nodes, At: now})
	m := tm.(Model)
	screen := m.Screen()
	for _, want := range []string{"PRESSURE", "in 3h10m", "in 1d2h", "> 1y", "no fill", "learning", "1 DiskPressure within 4h"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	for range ByPressure {
		m, _ = press(m, "s")
	}
	if m.sort != ByPressure {
		t.Fatalf("sort %v after %d presses", m.sort, ByPressure)
	}
	if got := strings.Join(rowOrder(m), " "); got != "node-d node-b node-f node-a node-e node-c" {
		t.Errorf("by pressure: %s, want soonest first, then over a year, not filling, not enough history, none", got)
	}
	m, _ = press(m, "enter")
	if screen := m.Screen(); !strings.Contains(screen, "in 3h10m (Nov 25 15:10 UTC; 90%: Nov 25 14:50 to Nov 25 15:40)") {
		t.Errorf("node view:\n%s", screen)
	}
}

// The Node's Ready condition (the API server's Node table's STATUS) is
// on its row, counted in the status line and ranked with the stale rows;
// the node view says when it is cordoned.
func TestReadyOnTheRow(t *testing.T) {
	nodes := fixture()
	nodes[0].Ready, nodes[3].Ready = "Ready", "NotReady,SchedulingDisabled"
	var tm tea.Model = New(Options{Now: func() time.Time { return now }})
	tm, _ = tm.Update(tea.WindowSizeMsg{Width: 170, Height: 20})
	tm, _ = tm.Update(ReadMsg{Nodes: nodes, At: now})
	m := tm.(Model)
	if !rowHasCell(m.Screen(), "node-d", "NotReady") || !rowHasCell(m.Screen(), "node-a", "Ready") || !strings.Contains(m.Screen(), "1 not ready") {
		t.Errorf("screen:\n%s", m.Screen())
	}
	if got := strings.Join(rowOrder(m), " "); got != "node-d node-b node-a node-c" {
		t.Errorf("order %s: a node not ready comes with the stale ones", got)
	}
	tm, _ = New(Options{Now: func() time.Time { return now }, Node: "node-d"}).Update(tea.WindowSizeMsg{Width: 170, Height: 30})
	tm, _ = tm.Update(ReadMsg{Nodes: nodes, At: now})
	if s := tm.(Model).Screen(); !strings.Contains(s, "NotReady, cordoned (scheduling disabled)") {
		t.Errorf("node view:\n%s", s)
	}
}

func rowHasCell(screen, node, cell string) bool {
	for line := range strings.Lines(screen) {
		if f := strings.Fields(line); strings.Contains(line, node+" ") && len(f) > 1 && slices.Contains(f, cell) {
			return true
		}
	}
	return false
}
