package grid

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Pane is what every table pane of the dashboard holds besides its data:
// the key map, the styles, the table, its filter and the pane's size. The
// Images, Containers, Cgroups and Events panes embed it, so sizing, the
// palette switch and the shared keys are written once.
type Pane struct {
	// Keys and Styles are shared by every copy of the pane (a pane is a
	// value, copied for each message): replaced, never written in place.
	Keys   *keys.KeyMap
	Styles *style.Styles
	Grid   Model
	Filter Filter
	Width  int
	Height int
	// Chrome is the number of lines the pane draws besides the table and
	// the info line (a summary above it, events under it).
	Chrome int
	// Top is how many of the Chrome lines are drawn above the info line
	// and the table, for mouse clicks.
	Top int
	// Reversed reverses the sort order (S).
	Reversed bool
	// Matched and Total are the items the filter lets through and all of
	// them, for the info line.
	Matched, Total int
	// Order names the sort order for the info line ("" for a pane with
	// one order): a summary too long for the row cannot cut it off.
	Order string
}

// NewPane returns a pane with an empty table of the columns, chrome lines
// apart from the table (top of them above it).
func NewPane(k keys.KeyMap, st style.Styles, cols []Column, chrome, top int) Pane {
	return Pane{Keys: &k, Styles: &st, Grid: New(cols, StylesFrom(st)), Chrome: chrome, Top: top}
}

// SetStyles switches the palette.
func (p *Pane) SetStyles(st style.Styles) {
	p.Styles = &st
	p.Grid.SetStyles(StylesFrom(st))
}

// SetSize sets the pane's size.
func (p *Pane) SetSize(w, h int) {
	p.Width, p.Height = w, h
	p.Resize()
}

// Resize gives the table the pane's height less the chrome and the info
// line. Call it when Chrome changes.
func (p *Pane) Resize() {
	p.Grid.SetSize(p.Width, max(p.Height-p.Chrome-1, 0))
}

// Capturing reports whether the pane takes every key (the filter is being
// typed).
func (p Pane) Capturing() bool { return p.Filter.Editing }

// HandleKey handles a key press as every table pane does, in this order:
// while the filter is typed every key goes to it, and rebuild runs when
// its text changes; the filter key starts it; esc clears a filter; the
// sort key runs sort and the reverse key reverses the order, unless sort
// is nil (a pane with one order); own, unless nil, takes the pane's own
// keys and reports whether it took k; any other key moves the cursor.
func (p *Pane) HandleKey(k tea.KeyPressMsg, rebuild, sort func(), own func(tea.KeyPressMsg) bool) {
	switch {
	case p.Filter.Editing:
		if p.Filter.Key(k, p.Keys) {
			p.Grid.Top() // a new filter starts from its first match
			rebuild()
		}
	case key.Matches(k, p.Keys.Filter):
		p.Filter.Start()
	case key.Matches(k, p.Keys.ClearFilter) && p.Filter.Active():
		p.Filter.Clear()
		p.Grid.Top()
		rebuild()
	case sort != nil && key.Matches(k, p.Keys.Sort):
		p.Grid.Top() // a new order starts from its first row
		p.Reversed = false
		sort()
	case sort != nil && key.Matches(k, p.Keys.Reverse):
		p.Grid.Top()
		p.Reversed = !p.Reversed
		rebuild()
	case own != nil && own(k):
	default:
		p.Grid, _ = p.Grid.Update(k, p.Keys)
	}
}

// Info is the line over the table: the filter on the left, and on the
// right how many items match it and which rows are on screen.
func (p Pane) Info() string {
	left := p.Filter.View(p.Styles.Label)
	right := p.Grid.Position()
	if p.Order != "" {
		order := p.Order
		if p.Reversed {
			order += ", reversed"
		}
		right = "sort: " + order + " · " + right
	}
	if p.Filter.Active() {
		right = fmt.Sprintf("%d/%d match · %s", p.Matched, p.Total, right)
	}
	right = p.Styles.Label.Render(right)
	gap := p.Width - lipgloss.Width(left) - lipgloss.Width(right)
	if gap < 1 {
		return ansi.Truncate(left+" "+right, p.Width, "…")
	}
	return left + fmt.Sprintf("%*s", gap, "") + right
}

// WithFilter appends the info line to parts.
func (p Pane) WithFilter(parts []string) []string {
	return append(parts, p.Info())
}

// ClickRow selects the row drawn at line y of the pane, if there is one.
func (p *Pane) ClickRow(y int) {
	if i := p.Grid.RowAt(y - p.Top - 1); i >= 0 {
		p.Grid.SetCursor(i)
	}
}

// SelectedID returns the selected row's ID, for the clipboard.
func (p Pane) SelectedID() (string, bool) {
	r, ok := p.Grid.Selected()
	if !ok || r.ID == "" {
		return "", false
	}
	return r.ID, true
}

// SortArrow marks column col as the sort column whose natural order is
// descending when desc, reversed when the pane is.
func (p *Pane) SortArrow(col int, desc bool) {
	p.Grid.SetSort(col, desc != p.Reversed)
}

// ClickSort sorts by the column header clicked at (x, y) of the pane, as
// btop does: cols[s] is the column order s sorts by, cur the order now. A
// click on another sortable column picks its order; on the sorted column
// it picks the next order that sorts by it, or reverses the order when
// there is none. It reports the order and whether the click was on a
// sortable header; the caller rebuilds its rows under it.
func (p *Pane) ClickSort(x, y int, cols []int, cur int) (int, bool) {
	if y != p.Top+1 || len(cols) == 0 {
		return cur, false
	}
	col := p.Grid.ColumnAt(x)
	if col < 0 {
		return cur, false
	}
	next := -1
	for i := range cols {
		s := (cur + 1 + i) % len(cols)
		if cols[s] == col {
			next = s
			break
		}
	}
	switch {
	case next < 0:
		return cur, false
	case next == cur:
		p.Reversed = !p.Reversed
	default:
		p.Reversed = false
	}
	p.Grid.Top()
	return next, true
}

// Click handles a click at (x, y) of a sortable table pane: on a header
// it sorts (ClickSort, with *sort the pane's order and cols the column of
// each order) and rebuilds; on a row it selects it.
func Click[S ~int](p *Pane, x, y int, cols []int, sort *S, rebuild func()) {
	if s, ok := p.ClickSort(x, y, cols, int(*sort)); ok {
		*sort = S(s)
		rebuild()
		return
	}
	p.ClickRow(y)
}

// Find puts the cursor on the first row, from the top, whose cells or ID
// contain s (ignoring case), and reports whether there is one: `:images
// redis` selects redis on the Images pane.
func (p *Pane) Find(s string) bool {
	s = strings.ToLower(s)
	for i, r := range p.Grid.Rows() {
		if r.Kind == Cut {
			continue
		}
		if strings.Contains(strings.ToLower(strings.Join(r.Cells, " ")+" "+r.ID), s) {
			p.Grid.SetCursor(i)
			return true
		}
	}
	return false
}
