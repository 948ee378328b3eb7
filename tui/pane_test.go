package tui

import (
	"fmt"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// probe is a pane written in this file alone: adding it to the dashboard
// is this type plus its registration (newModel's argument), which proves
// issue 11's "a pane added touches one file plus its registration".
type probe struct {
	w, h    int
	keys    []string
	refresh int
	passes  int
	ping    key.Binding
}

func (p probe) Title() string { return "Probe" }

func (p probe) Update(msg tea.Msg) (probe, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		p.keys = append(p.keys, msg.String())
	case feed.Snapshot:
		p.refresh++
	case feed.Pass:
		p.passes++
	}
	return p, nil
}

func (p probe) View() string {
	return fmt.Sprintf("probe %dx%d keys=%s refreshes=%d passes=%d", p.w, p.h, strings.Join(p.keys, ","), p.refresh, p.passes)
}
func (p *probe) SetSize(w, h int)         { p.w, p.h = w, h }
func (p *probe) SetStyles(style.Styles)   {}
func (p probe) ShortHelp() []key.Binding  { return []key.Binding{p.ping} }
func (p probe) FullHelp() [][]key.Binding { return [][]key.Binding{{p.ping}} }
func (p probe) Capturing() bool           { return false }
func (p probe) Selected() (string, bool)  { return "probe-id", true }
func (p probe) Detail() (feed.Detail, bool) {
	return feed.Detail{Title: "Probe detail", Lines: []string{"probe line"}}, true
}

func TestAddedPaneTouchesOneFilePlusRegistration(t *testing.T) {
	c := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	now := fixedNow
	o := fixtureOptions(c, &now).withDefaults()
	k := keys.Default(false)
	panes := append(defaultPanes(o, k, style.Default(true)), adapt(probe{ping: key.NewBinding(key.WithKeys("z"), key.WithHelp("z", "ping probe"))}))
	m := newModel(o, k, panes...)
	m = send(m, windowSize(100, 30))
	m = refreshNow(t, m)

	s := ansi.Strip(m.Screen())
	if !strings.Contains(strings.Split(s, "\n")[0], "6 Probe") {
		t.Fatalf("the tab bar does not show the new pane:\n%s", s)
	}
	m = press(m, "6")
	if m.Active() != 5 {
		t.Fatalf("key 6 selected pane %d, want the probe (5)", m.Active())
	}
	m = press(m, "z", "j")
	s = ansi.Strip(m.Screen())
	// The body is the screen less the tab bar, its rule, the status line
	// and the help line.
	if !strings.Contains(s, "probe 100x26 keys=z,j refreshes=1") {
		t.Errorf("the probe did not get its size, its keys and the refresh it missed:\n%s", s)
	}
	m = press(m, "tab")
	if m.Active() != PaneOverview {
		t.Errorf("tab from the last pane went to %d, want the first", m.Active())
	}
	m = press(m, "6", "i", "y")
	if !strings.Contains(ansi.Strip(m.Screen()), "passes=1") {
		t.Errorf("the probe did not get the applied pass:\n%s", ansi.Strip(m.Screen()))
	}
	m = press(m, "enter")
	if s := ansi.Strip(m.Screen()); !m.ModalOpen() || !strings.Contains(s, "probe line") {
		t.Errorf("enter did not open the probe's detail:\n%s", s)
	}
	m = press(m, "esc")
	if m.ModalOpen() {
		t.Error("esc did not close the detail")
	}
	m = press(m, "?")
	if s := ansi.Strip(m.Screen()); !strings.Contains(s, "z ping probe") || !strings.Contains(s, "1-6") {
		t.Errorf("the full help lacks the probe's key or the pane range 1-6:\n%s", s)
	}
}
