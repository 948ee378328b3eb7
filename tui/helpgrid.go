// The full help (?): every key in titled sections, laid out in columns
// over the pane's space, as k9s's help takes its screen.

package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// k9sNote says where nodegc's keys meet a k9s user's habits and where
// they part: y applies only where a preview asks y/n.
const k9sNote = "k9s habits: d describes, y shows raw JSON; D dry-runs; y in a preview applies"

// helpSection is one titled group of keys in the full help.
type helpSection struct {
	title string
	keys  []key.Binding
}

// helpSections are the full help's groups: the global ones, then the
// active pane's navigation, then the rest of the pane's keys as one.
func (m Model) helpSections() []helpSection {
	g := m.FullHelp()
	titles := []string{"GENERAL", "GC", "VIEW", "IN A PREVIEW", "NAVIGATION"}
	var out []helpSection
	for i, keys := range g {
		if i < len(titles) {
			out = append(out, helpSection{title: titles[i], keys: keys})
			continue
		}
		if i == len(titles) {
			out = append(out, helpSection{title: strings.ToUpper(m.activePane().Title())})
		}
		out[len(out)-1].keys = append(out[len(out)-1].keys, keys...)
	}
	return out
}

// helpBlock renders a section: its title, then one line a key that is
// enabled, the keys aligned; nil when none is.
func (m Model) helpBlock(s helpSection) []string {
	var ks, ds []string
	for _, b := range s.keys {
		if b.Enabled() {
			ks, ds = append(ks, b.Help().Key), append(ds, b.Help().Desc)
		}
	}
	if len(ks) == 0 {
		return nil
	}
	kw := 0
	for _, k := range ks {
		kw = max(kw, ansi.StringWidth(k))
	}
	st := m.help.Styles
	lines := []string{m.st.Faint.Render(s.title)}
	for i, k := range ks {
		lines = append(lines, st.FullKey.Render(k+strings.Repeat(" ", kw-ansi.StringWidth(k)))+" "+st.FullDesc.Render(ds[i]))
	}
	return lines
}

// helpGap is the blank columns between two columns of the help.
const helpGap = 3

// helpColumns stacks the blocks into columns at most h lines high, a
// blank line between two blocks, a block never split.
func helpColumns(blocks [][]string, h int) [][]string {
	var cols [][]string
	var col []string
	for _, b := range blocks {
		if len(col) > 0 && len(col)+1+len(b) > h {
			cols, col = append(cols, col), nil
		}
		if len(col) > 0 {
			col = append(col, "")
		}
		col = append(col, b...)
	}
	if len(col) > 0 {
		cols = append(cols, col)
	}
	return cols
}

// columnsWidth is the cells the columns take side by side.
func columnsWidth(cols [][]string) int {
	w := 0
	for i, c := range cols {
		if i > 0 {
			w += helpGap
		}
		w += lipgloss.Width(strings.Join(c, "\n"))
	}
	return w
}

// helpGrid lays the sections out in columns, as short as the width w
// allows and at most h lines high, a section never split (one taller than
// h is cut). When even h-line columns are wider than w, the last ones go
// and the last line says how many keys are not shown; with room to spare,
// the last line says where the keys meet and part from k9s's.
func (m Model) helpGrid(w, h int) string {
	var blocks [][]string
	tallest := 1
	for _, s := range m.helpSections() {
		b := m.helpBlock(s)
		if b == nil {
			continue
		}
		if len(b) > h {
			b = append(b[:h-1], m.st.Faint.Render("…"))
		}
		blocks = append(blocks, b)
		tallest = max(tallest, len(b))
	}
	cols := helpColumns(blocks, h)
	for lim := tallest; lim < h; lim++ {
		if c := helpColumns(blocks, lim); columnsWidth(c) <= w {
			cols = c
			break
		}
	}
	var drawn []string
	used, hidden := 0, 0
	for i, c := range cols {
		text := strings.Join(c, "\n")
		cw := lipgloss.Width(text)
		if i > 0 {
			cw += helpGap
		}
		if used+cw > w {
			for _, l := range c {
				if l != "" && !strings.HasPrefix(ansi.Strip(l), " ") {
					hidden++
				}
			}
			continue
		}
		block := lipgloss.NewStyle().Width(lipgloss.Width(text)).Render(text)
		if i > 0 {
			block = lipgloss.NewStyle().PaddingLeft(helpGap).Render(block)
		}
		drawn = append(drawn, block)
		used += cw
	}
	lines := strings.Split(lipgloss.JoinHorizontal(lipgloss.Top, drawn...), "\n")
	switch {
	case hidden > 0:
		if len(lines) >= h {
			lines = lines[:h-1]
		}
		lines = append(lines, m.st.Faint.Render(fmt.Sprintf("… %d more lines of keys: a wider terminal shows them (docs/dashboard.md lists every key)", hidden)))
	case len(lines)+2 <= h:
		lines = append(lines, "", m.st.Faint.Render(k9sNote))
	}
	for i, l := range lines {
		lines[i] = ansi.Truncate(strings.TrimRight(l, " "), w, "…")
	}
	return strings.Join(lines, "\n")
}
