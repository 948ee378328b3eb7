package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
)

// Issue 12: c copies the selected row's ID with OSC 52.
func TestCopySelectedID(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	m = press(m, "2") // Images: the first row is alpine
	nm, cmd := m.Update(keyMsg("c"))
	m = nm.(Model)
	if cmd == nil {
		t.Fatal("c returned no command")
	}
	want := fixtureSnapshot().Images[7].ID // alpine, ranked first
	if got := fmt.Sprint(cmd()); got != want {
		t.Errorf("clipboard gets %q, want %q", got, want)
	}
	if !strings.Contains(m.flash, "copied "+want) {
		t.Errorf("status %q does not say what was copied", m.flash)
	}
}

// Issue 12: enter opens the details of an image, a pod and a pass; esc
// goes back.
func TestDrillDown(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want []string
	}{
		{"an image: tags, size, order, verdict, containers using it", []string{"2", "j", "j", "j", "j", "j", "j", "enter"},
			[]string{"Image registry.k8s.io/pause:3.9", "TAGS", "SIZE", "ORDER     #6 of 10", "CONTAINERS USING IT (4", "default/api-6c4b/api"}},
		{"a removal candidate says where it sits", []string{"2", "j", "enter"},
			[]string{"Image postgres:16", "removal 1 of 3 (space), above the cut line"}},
		{"a pod: sandbox, containers, dead ones, cgroup", []string{"3", "enter"},
			[]string{"SANDBOXES (1)", "CONTAINERS (", "dead)", "CGROUP"}},
		{"a pass: what it removed", []string{"i", "y", "5", "enter"},
			[]string{"Pass #1", "ITEMS     3 planned: removed 3", "IMAGES (3)", "removed", "postgres:16"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := fixtureModel(t, 120, 40)
			m = press(m, tt.keys...)
			s := ansi.Strip(m.Screen())
			if !m.ModalOpen() {
				t.Fatalf("no detail open:\n%s", s)
			}
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("the detail lacks %q:\n%s", w, s)
				}
			}
			if m = press(m, "esc"); m.ModalOpen() {
				t.Error("esc did not go back")
			}
		})
	}
}

// Issue 12: sort by column with a visible arrow, reversed with S; esc
// clears a filter; the filter shows its match count.
func TestSortArrowFilterCount(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	m = press(m, "2", "s")
	s := ansi.Strip(m.Screen())
	if !strings.Contains(s, "SIZE▼") {
		t.Fatalf("sorting by size shows no ▼ on SIZE:\n%s", s)
	}
	first := func(m Model) string {
		for _, l := range strings.Split(ansi.Strip(m.Screen()), "\n") {
			if strings.HasPrefix(l, "▌") {
				return l
			}
		}
		return ""
	}
	if f := first(m); !strings.Contains(f, "node-exporter") || !strings.Contains(f, "v1.8.0") || !strings.Contains(f, "2.1 GiB") {
		t.Errorf("largest first, got %q", f)
	}
	m = press(m, "S")
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "SIZE▲") || !strings.Contains(first(m), "1.0 MiB") {
		t.Errorf("S did not reverse the order (smallest first, ▲):\n%s", s)
	}
	m = press(m, "/", "r", "e", "enter")
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "/10 match") {
		t.Errorf("the filter shows no match count:\n%s", s)
	}
	m = press(m, "esc")
	if s := ansi.Strip(m.Screen()); strings.Contains(s, "filter:") || !strings.Contains(s, "1-10 of 10") {
		t.Errorf("esc did not clear the filter, or the position is missing:\n%s", s)
	}
}

// Issue 12: the mouse selects panes and rows, and the wheel scrolls.
func TestMouse(t *testing.T) {
	m, _ := fixtureModel(t, 100, 30)
	// "nodegc  1 Overview  2 Images": the Images tab starts at column 20.
	m = send(m, tea.MouseClickMsg{X: 21, Y: 0, Button: tea.MouseLeft})
	if m.Active() != PaneImages {
		t.Fatalf("a click on the Images tab selected %d", m.Active())
	}
	// Body lines: 0 summary, 1 info, 2 header, 3 first row.
	m = send(m, tea.MouseClickMsg{X: 10, Y: bodyTop + 5, Button: tea.MouseLeft})
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "▌   3 golang") {
		t.Errorf("a click on the third row did not select it:\n%s", s)
	}
	m = send(m, tea.MouseWheelMsg{X: 10, Y: 10, Button: tea.MouseWheelDown})
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "▌   4 redis") {
		t.Errorf("the wheel did not move the cursor down:\n%s", s)
	}
	if v := m.View(); v.MouseMode != tea.MouseModeCellMotion {
		t.Errorf("mouse mode %v, want cell motion", v.MouseMode)
	}
}

// recordingController records the context of each Apply.
type recordingController struct {
	*fakeController
	ctxs []context.Context
}

func (r *recordingController) Apply(ctx context.Context, p engine.Plan) (engine.PassReport, error) {
	r.ctxs = append(r.ctxs, ctx)
	return r.fakeController.Apply(ctx, p)
}

func (r *recordingController) Force(ctx context.Context, kind engine.PassKind) (engine.PassReport, error) {
	r.ctxs = append(r.ctxs, ctx)
	return r.fakeController.Force(ctx, kind)
}

// Issue 12: a running pass shows its progress, and X stops it after the
// item in flight (its context is cancelled).
func TestProgressAndStop(t *testing.T) {
	rc := &recordingController{fakeController: newFakeController(fixtureSnapshot(), engine.DefaultPolicy())}
	now := fixedNow
	m := send(New(fixtureOptions(rc, &now)), windowSize(100, 30))
	m = refreshNow(t, m)
	m = press(m, "i")
	nm, apply := m.Update(keyMsg("y"))
	m = nm.(Model)
	apply() // the pass runs; its result is not fed back: it is in flight
	m = send(m, noticeMsg{ok: true, n: engine.Notice{
		Status:   engine.Status{Running: engine.PassImages},
		Progress: &engine.Progress{Pass: 8, Kind: engine.PassImages, ItemsDone: 1, Items: 3, BytesDone: 430 << 20, Bytes: 2780 << 20},
	}})
	s := ansi.Strip(m.Screen())
	if !strings.Contains(s, "images pass #8: 1 of 3 items · 430.0 MiB of 2.7 GiB") || !strings.Contains(s, "X stop") {
		t.Fatalf("no progress on the status line:\n%s", s)
	}
	if len(rc.ctxs) != 1 || rc.ctxs[0].Err() != nil {
		t.Fatalf("apply contexts %v", rc.ctxs)
	}
	nm, stop := m.Update(keyMsg("X"))
	m = nm.(Model)
	if stop == nil {
		t.Fatal("X returned no command")
	}
	stop()
	if rc.ctxs[0].Err() == nil {
		t.Error("X did not cancel the pass's context")
	}
	if !strings.Contains(m.flash, "stopping the pass after the item in flight") {
		t.Errorf("status %q", m.flash)
	}
}

// Issue 12: Overview draws the session's history, and uses the room of a
// big terminal.
func TestOverviewHistory(t *testing.T) {
	m, _ := fixtureModel(t, 220, 60)
	m = press(m, "i", "y", "1")
	s := ansi.Strip(m.Screen())
	for _, w := range []string{"USAGE HISTORY", "band 80–85%", "FREED PER PASS", "1 pass this session", "high 85%", "low 80%", "┄┄┄", "┈┈┈"} {
		if !strings.Contains(s, w) {
			t.Errorf("Overview lacks %q:\n%s", w, s)
		}
	}
	used := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			used++
		}
	}
	if used < 45 {
		t.Errorf("Overview at 220x60 fills %d of 60 rows:\n%s", used, s)
	}
	small, _ := fixtureModel(t, 80, 24)
	if s := ansi.Strip(small.Screen()); !strings.Contains(s, "USAGE HISTORY") || !strings.Contains(s, "FREED PER PASS") || !strings.Contains(s, "NODEGC") {
		t.Errorf("Overview at 80x24 has no history or lost its last line:\n%s", s)
	}
}

// TestNoTableTextBesideAPopUp pins issue 41: on the rows a pop-up covers,
// nothing of the table shows beside its borders, at 80, 120 and 220
// columns.
func TestNoTableTextBesideAPopUp(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 36}, {220, 60}} {
		m, _ := fixtureModel(t, size[0], size[1])
		s := ansi.Strip(press(m, "2", "j", "enter").Screen())
		for _, l := range strings.Split(s, "\n") {
			i, j := strings.IndexAny(l, "│╭╰"), strings.LastIndexAny(l, "│╮╯")
			if i < 0 || j <= i {
				continue
			}
			if strings.TrimSpace(l[:i]) != "" || strings.TrimSpace(l[j+len("│"):]) != "" {
				t.Errorf("at %dx%d, table text beside the pop-up: %q", size[0], size[1], l)
				break
			}
		}
	}
}

// TestContainersSummarySaysThePodSourceAt120 pins issue 41: at 120 columns
// the Containers pane's summary shows the pod source's state whole; the
// policy, which does not change, is what a narrow screen cuts.
func TestContainersSummarySaysThePodSourceAt120(t *testing.T) {
	m, _ := fixtureModel(t, 120, 36)
	line := lineWith(ansi.Strip(press(m, "3").Screen()), "dead in")
	i := strings.Index(line, "pods: ")
	if i < 0 || strings.Contains(line[i:i+min(len(line)-i, 20)], "…") {
		t.Errorf("summary %q: the pod source's state is cut or missing", line)
	}
}
