package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/internal/format"
)

// appName and tabGap lay out the tab bar; click reads the same layout.
const (
	appName = "nodegc"
	tabGap  = "  "
)

// tabLabels are the tabs' texts: the pane's number and title.
func (m Model) tabLabels() []string {
	out := make([]string, len(m.panes))
	for i, p := range m.panes {
		out[i] = fmt.Sprintf("%d %s", i+1, p.Title())
	}
	return out
}

// bodyTop is the screen row where the panes' body starts: under the tab
// bar and its rule.
const bodyTop = 2

// click selects the tab or the row under the mouse; with a modal open it
// does nothing.
func (m Model) click(msg tea.MouseClickMsg) (tea.Model, tea.Cmd) {
	if m.modal != nil || msg.Button != tea.MouseLeft {
		return m, nil
	}
	if msg.Y == 0 {
		x := ansi.StringWidth(appName + tabGap)
		for i, t := range m.tabLabels() {
			w := ansi.StringWidth(t)
			if msg.X >= x && msg.X < x+w {
				m.activate(Pane(i))
				cmd := m.cgroupsDue() // before m is returned: it re-arms the pulse
				return m, cmd
			}
			x += w + ansi.StringWidth(tabGap)
		}
		return m, nil
	}
	if y := msg.Y - bodyTop; y >= 0 && y < max(m.height-m.chrome(), 1) && !m.help.ShowAll {
		m.setPane(m.active, m.activePane().Click(msg.X, y))
	}
	return m, nil
}

// wheel scrolls the modal, or moves the active table's cursor, as the
// arrow keys do.
func (m Model) wheel(msg tea.MouseWheelMsg) (tea.Model, tea.Cmd) {
	var k tea.KeyPressMsg
	switch msg.Button {
	case tea.MouseWheelUp:
		k = tea.KeyPressMsg{Code: tea.KeyUp}
	case tea.MouseWheelDown:
		k = tea.KeyPressMsg{Code: tea.KeyDown}
	default:
		return m, nil
	}
	if m.modal != nil {
		d := *m.modal
		d.scroll(k, m)
		m.modal = &d
		return m, nil
	}
	if m.capturing() {
		return m, nil
	}
	return m.toPane(k)
}

// progressLine is the status line while a pass runs: items and bytes
// done of those planned, and the key that stops it.
func (m Model) progressLine() string {
	p := m.progress
	st := m.st
	var b strings.Builder
	fmt.Fprintf(&b, "%s pass", p.Kind)
	if p.Pass > 0 {
		fmt.Fprintf(&b, " #%d", p.Pass)
	}
	fmt.Fprintf(&b, ": %d of %d items", p.ItemsDone, p.Items)
	if p.Bytes > 0 {
		fmt.Fprintf(&b, " · %s of %s", format.Bytes(p.BytesDone), format.Bytes(p.Bytes))
	}
	frac := 0.0
	if p.Items > 0 {
		frac = float64(p.ItemsDone) / float64(p.Items)
	}
	const w = 12
	n := min(int(frac*w), w)
	bar := st.GaugeFill.Render(strings.Repeat("█", n)) + st.GaugeEmpty.Render(strings.Repeat("░", w-n))
	s := st.Accent.Render("● "+b.String()) + " " + bar
	if m.stopApply != nil {
		s += st.Label.Render(" · " + m.keys.StopPass.Help().Key + " stop")
	}
	return s
}
