package grid

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/tui/internal/feed"
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
	// Orders are the pane's sort orders, which s cycles through; Sort is
	// the one in force. One order (or none) has no sort keys.
	Orders []Order
	Sort   int
	// Reversed reverses the sort order (S).
	Reversed bool
	// Matched and Total are the items the filter lets through and all of
	// them, for the info line.
	Matched, Total int
	// Order names the sort order for the info line ("" for a pane with
	// one order): a summary too long for the row cannot cut it off.
	Order string
	// Legend explains the table's markers on the left of the info line
	// while no filter is shown there.
	Legend string
}

// Order is one sort order of a table pane: its name on the info line,
// the column it sorts by (which bears the arrow), and whether it reads
// from the largest down.
type Order struct {
	Name string
	Col  int
	Desc bool
}

// Table is a table pane: a model that embeds Pane and rebuilds its rows
// from its items under the filter and the sort order. Update, Click and
// Refresh work on it, so that the keys, the clicks and the sort orders of
// every table pane are written once, here.
type Table interface {
	table() *Pane
	// Rebuild puts the pane's rows in the table under the filter, the
	// sort order (Sort, Reversed) and the pane's own state.
	Rebuild()
}

// KeyTaker is a Table with keys of its own (the Cgroups tree's collapse
// and expand): TakeKey reports whether it took k.
type KeyTaker interface {
	TakeKey(k tea.KeyPressMsg) bool
}

func (p *Pane) table() *Pane { return p }

// Refresh marks the sort order on its column and on the info line, and
// rebuilds t's rows.
func Refresh(t Table) {
	p := t.table()
	if len(p.Orders) > 0 {
		o := p.Orders[p.Sort]
		p.SortArrow(o.Col, o.Desc)
		if len(p.Orders) > 1 {
			p.Order = o.Name
		}
	}
	t.Rebuild()
}

// Update does with msg what every table pane does: a key goes to the
// filter, the sort keys, the pane's own keys (KeyTaker) or the cursor
// (HandleKey's order); the clock and a refresh set the time the rows'
// ages are drawn at. The pane then takes the data it shows.
func Update(t Table, msg tea.Msg) {
	p := t.table()
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		var own func(tea.KeyPressMsg) bool
		if k, ok := t.(KeyTaker); ok {
			own = k.TakeKey
		}
		var sort func()
		if len(p.Orders) > 1 {
			sort = func() {
				p.Sort = (p.Sort + 1) % len(p.Orders)
				Refresh(t)
			}
		}
		p.HandleKey(msg, func() { Refresh(t) }, sort, own)
	case feed.Clock:
		p.Grid.SetNow(msg.Now)
	case feed.Snapshot:
		p.Grid.SetNow(msg.At)
	}
}

// Ordered returns items in the pane's sort order: as they come under the
// first order, else sorted stably by cmp; reversed when the pane is. It
// never reorders items itself.
func Ordered[T any](p *Pane, items []T, cmp func(a, b T) int) []T {
	if p.Sort == 0 && !p.Reversed {
		return items
	}
	items = slices.Clone(items)
	if p.Sort != 0 {
		slices.SortStableFunc(items, cmp)
	}
	if p.Reversed {
		slices.Reverse(items)
	}
	return items
}

// Click handles a click at (x, y) of a table pane: on a sortable header
// it sorts by that column (ClickSort), on a row it selects it.
func Click(t Table, x, y int) {
	p := t.table()
	if len(p.Orders) > 1 {
		cols := make([]int, len(p.Orders))
		for i, o := range p.Orders {
			cols[i] = o.Col
		}
		if s, ok := p.ClickSort(x, y, cols, p.Sort); ok {
			p.Sort = s
			Refresh(t)
			return
		}
	}
	p.ClickRow(y)
}

// NextChange is when an age or countdown on screen next reads
// differently.
func (p Pane) NextChange() time.Time { return p.Grid.NextChange() }

// ShortHelp returns a table pane's keys for the footer: details, filter,
// sort and copy.
func (p Pane) ShortHelp() []key.Binding {
	return []key.Binding{p.Keys.Drill, p.Keys.Filter, p.Keys.Sort, p.Keys.Copy}
}

// FullHelp returns a table pane's keys for the full help.
func (p Pane) FullHelp() [][]key.Binding {
	return [][]key.Binding{p.Keys.Navigation(), append([]key.Binding{p.Keys.Drill}, p.Keys.Table()...)}
}

// NewPane returns a pane with an empty table of the columns, chrome lines
// apart from the table (top of them above it), sorted in the orders (the
// first in force).
func NewPane(k keys.KeyMap, st style.Styles, cols []Column, chrome, top int, orders ...Order) Pane {
	return Pane{Keys: &k, Styles: &st, Grid: New(cols, StylesFrom(st)), Chrome: chrome, Top: top, Orders: orders}
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
			p.refilter(rebuild)
		}
	case key.Matches(k, p.Keys.Filter):
		p.Filter.Start()
	case key.Matches(k, p.Keys.ClearFilter) && p.Filter.Active():
		p.Filter.Clear()
		p.refilter(rebuild)
	case sort != nil && key.Matches(k, p.Keys.Sort):
		// The selected row stays selected in the new order.
		p.Reversed = false
		sort()
	case sort != nil && key.Matches(k, p.Keys.Reverse):
		p.Reversed = !p.Reversed
		rebuild()
	case own != nil && own(k):
	default:
		p.Grid, _ = p.Grid.Update(k, p.Keys)
	}
}

// refilter rebuilds the rows under a changed filter: the selected row
// stays selected if it still matches, else the first match is.
func (p *Pane) refilter(rebuild func()) {
	rebuild()
	if _, lost := p.Grid.Lost(); lost {
		p.Grid.Top()
		rebuild()
		p.Grid.Pin()
	}
}

// Info is the line over the table: the filter on the left, and on the
// right how many items match it and which rows are on screen.
func (p Pane) Info() string {
	left := p.Filter.View(p.Styles.Label)
	if left == "" && p.Legend != "" {
		left = p.Styles.Faint.Render(p.Legend)
	}
	right := p.Grid.Position()
	if r, ok := p.Grid.Lost(); ok && len(r.Cells) > 0 {
		right = strings.TrimSpace(r.Cells[0]) + " is gone · ↑↓ to select · " + right
	}
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

// Selected returns the selected row's ID, for the clipboard.
func (p Pane) Selected() (string, bool) {
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
	return next, true
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
