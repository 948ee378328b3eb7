package tui

import (
	"context"
	"fmt"
	"strings"
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
	case "ctrl+d":
		return tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}
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

// goldenSizes are the terminal sizes every screen is checked at: the
// smallest the dashboard is made for, a common one, and a large one.
var goldenSizes = []struct{ w, h int }{{80, 24}, {120, 36}, {220, 60}}

// goldenScreens are the screens checked at every size: each pane, the
// journal, the full help over each pane, the previews and the details.
var goldenScreens = []struct {
	name string
	keys []string
}{
	{"overview", nil},
	{"images", []string{"2"}},
	{"containers", []string{"3"}},
	{"cgroups", []string{"4", "down", "down", "down", "down", "enter"}},
	{"events", []string{"i", "y", "5"}},
	{"journal", []string{"i", "y", "L"}},
	{"help overview", []string{"?"}},
	{"help images", []string{"2", "?"}},
	{"help containers", []string{"3", "?"}},
	{"help cgroups", []string{"4", "?"}},
	{"help events", []string{"i", "y", "5", "?"}},
	{"dry-run preview", []string{"D"}},
	{"remove one preview", []string{"2", "j", "j", "j", "ctrl+d"}},
	{"image detail", []string{"2", "j", "enter"}},
	{"pod detail", []string{"3", "enter"}},
	{"pass detail", []string{"i", "y", "5", "enter"}},
	{"overview after a pass", []string{"i", "y", "1"}},
}

// TestGoldenScreens checks every screen at every size against
// testdata/TestGoldenScreens/WxH/NAME.golden, over the fixture node and
// clock; `go test ./tui -run TestGoldenScreens -update` rewrites them.
func TestGoldenScreens(t *testing.T) {
	for _, sz := range goldenSizes {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			for _, tt := range goldenScreens {
				t.Run(tt.name, func(t *testing.T) {
					m := goldenModel(t, sz.w, sz.h, tt.keys)
					screen := ansi.Strip(m.Screen())
					checkFits(t, screen, sz.w, sz.h)
					golden.RequireEqual(t, []byte(screen))
				})
			}
		})
	}
}

// goldenModel is the fixture dashboard at w×h with a journal, after keys.
func goldenModel(t *testing.T, w, h int, keys []string) Model {
	t.Helper()
	m, _ := fixtureModel(t, w, h)
	m.o.Journal = fixtureJournal
	for _, k := range keys {
		nm, cmd := m.Update(keyMsg(k))
		m = runCmd(nm.(Model), cmd)
	}
	return m
}

// checkFits fails when a screen has more lines than the terminal's
// height or a line wider than its width.
func checkFits(t *testing.T, screen string, w, h int) {
	t.Helper()
	lines := strings.Split(screen, "\n")
	if len(lines) > h {
		t.Errorf("%d lines on a %d-line terminal", len(lines), h)
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw > w {
			t.Errorf("line %d is %d cells wide on a %d-column terminal: %q", i+1, lw, w, l)
		}
	}
}

// fixtureJournal is a deletion journal of one earlier pass: an image and
// a dead container removed, an image the runtime refused.
func fixtureJournal(context.Context) ([]engine.JournalEntry, error) {
	at := ago(5 * time.Minute)
	pass := engine.JournalPass("20250601T115500Z-4242/3")
	e := func(op engine.JournalOp, kind engine.ItemKind, id, tag string, size int64, errText string) engine.JournalEntry {
		j := engine.JournalEntry{Time: at, Op: op, Pass: pass, PassKind: engine.PassFull, Kind: kind, ID: id, SizeBytes: size,
			Reason: "space", Error: errText}
		if tag != "" {
			j.RepoTags = []string{tag}
		}
		return j
	}
	img := fmt.Sprintf("sha256:%02x%062d", 11, 11)
	bad := fmt.Sprintf("sha256:%02x%062d", 12, 12)
	return []engine.JournalEntry{
		e(engine.JournalIntent, engine.ItemImage, img, "docker.io/library/node:20", 380*mib, ""),
		e(engine.JournalRemoved, engine.ItemImage, img, "docker.io/library/node:20", 380*mib, ""),
		e(engine.JournalIntent, engine.ItemImage, bad, "quay.io/acme/ledger:v1.0.0", 95*mib, ""),
		e(engine.JournalFailed, engine.ItemImage, bad, "quay.io/acme/ledger:v1.0.0", 95*mib, "image is in use by a container"),
		e(engine.JournalIntent, engine.ItemContainer, "c-old-0", "", 0, ""),
		e(engine.JournalRemoved, engine.ItemContainer, "c-old-0", "", 0, ""),
	}, nil
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
