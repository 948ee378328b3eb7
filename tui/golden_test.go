package tui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/nodegc/nodegc/engine"
)

// refreshNow runs one refresh synchronously, as the program would.
func refreshNow(t *testing.T, m Model) Model {
	t.Helper()
	cmd := m.startRefresh(true)
	nm, next := m.Update(cmd())
	return runCmd(nm.(Model), next)
}

func send(m Model, msgs ...tea.Msg) Model {
	for _, msg := range msgs {
		nm, _ := m.Update(msg)
		m = nm.(Model)
	}
	return m
}

func keyMsg(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// fixtureModel is the dashboard over the fixture node at 100×30, after two
// refreshes two seconds apart (so CPU rates exist).
func fixtureModel(t *testing.T, w, h int) (Model, *fakeController) {
	t.Helper()
	c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	now := fixedNow.Add(-2 * time.Second)
	m := New(fixtureOptions(c, &now))
	m = send(m, tea.WindowSizeMsg{Width: w, Height: h})
	m = refreshNow(t, m)
	now = fixedNow
	m = refreshNow(t, m)
	return m, c
}

func TestGoldenPanes(t *testing.T) {
	tests := []struct {
		name string
		keys []string
	}{
		{"overview", nil},
		{"images", []string{"2"}},
		{"containers", []string{"3"}},
		{"cgroups", []string{"4", "down", "down", "down", "down", "enter"}},
		{"events", []string{"i", "y", "5"}},
		{"dry-run preview", []string{"d"}},
		{"full help", []string{"2", "?"}},
		{"image detail", []string{"2", "j", "enter"}},
		{"pod detail", []string{"3", "enter"}},
		{"pass detail", []string{"i", "y", "5", "enter"}},
		{"overview after a pass", []string{"i", "y", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := fixtureModel(t, 100, 30)
			for _, k := range tt.keys {
				nm, cmd := m.Update(keyMsg(k))
				m = nm.(Model)
				m = runCmd(m, cmd)
			}
			golden.RequireEqual(t, []byte(ansi.Strip(m.Screen())))
		})
	}
}

func windowSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// runCmd runs a command and feeds its messages back, as the program would,
// for commands that return at once (no ticks, no notice waits).
func runCmd(m Model, cmd tea.Cmd) Model {
	if cmd == nil {
		return m
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			m = runCmd(m, c)
		}
		return m
	}
	if msg == nil {
		return m
	}
	nm, next := m.Update(msg)
	return runCmd(nm.(Model), next)
}
