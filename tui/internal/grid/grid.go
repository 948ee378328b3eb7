// Package grid is the dashboard's table: fixed and flexible columns, a
// cursor, per-row kinds (removal, kept, group header, cut line), and a View
// that renders only the rows that fit. The bubbles table styles only the
// selected row and binds g, G, d and f, which the dashboard needs; this one
// styles each row by its kind and leaves the keys to the key map.
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

	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Kind says how a row is drawn.
type Kind uint8

// Row kinds.
const (
	Normal Kind = iota
	// Dim is a row that is only context (a kept item).
	Dim
	// Remove is an item the plan removes.
	Remove
	// Warn is an item that needs attention (an error).
	Warn
	// Group is a header row of a group (a pod).
	Group
	// Cut is the cut line: Cells[0] is drawn across the row between rules.
	Cut
	numKinds
)

// Column is one column. Flexible columns share the width left over by the
// fixed ones in proportion to their Width.
type Column struct {
	Title string
	Width int
	Flex  bool
	Right bool
	// Middle cuts a value too long for the column in its middle, not at
	// its end: a reference keeps its registry and its name and tag.
	Middle bool
	// Ref shortens an image reference too long for the column as Ref
	// does: its digest, its registry and path, then its name, keeping
	// its tag.
	Ref bool
	// MinTable hides the column when the table is narrower.
	MinTable int
}

// Row is one line of the table.
type Row struct {
	Cells []string
	Kind  Kind
	// Span draws Cells[0] across the whole row.
	Span bool
	// Key identifies the row across refreshes, so the cursor stays on it.
	Key string
	// ID is what c copies to the clipboard: an image, container or pod
	// ID. Empty: the row has nothing to copy.
	ID string
	// Clocks are the row's cells that move with the clock (an age, a
	// countdown): drawn at render from the time SetNow gave, over the
	// text in Cells.
	Clocks []Clock
}

// Clock is a cell whose text depends on the time: Text(At, now) is
// drawn in column Col. Text must change only where format.NextChange(At,
// now) says (a format.Duration of the time between them, with words
// around it), so the dashboard redraws exactly when it changes.
type Clock struct {
	Col  int
	At   time.Time
	Text func(at, now time.Time) string
}

// Styles draw the header, the selected row and each row kind.
type Styles struct {
	Header   lipgloss.Style
	Selected lipgloss.Style
	Kinds    [numKinds]lipgloss.Style
}

// Model is the table's state.
type Model struct {
	cols   []Column
	widths []int
	rows   []Row
	cursor int
	offset int
	// moved says the user moved the cursor off the first row: refreshes
	// then keep it on its row; otherwise the view stays at the top, where
	// the newest or first-ranked rows are, as new rows arrive.
	moved bool
	// lost is the selected row, as last shown, when a refresh dropped it
	// (nil while the selection holds): no row is selected then, so that
	// no action lands on the row that took its place, until it comes back
	// or the user moves. Never written in place: copies share it.
	lost   *Row
	width  int
	height int
	// styles is shared by the copies of the table: replaced, never
	// written in place.
	styles *Styles
	// sortCol is the column the rows are sorted by (-1: none shown);
	// desc says the arrow points down.
	sortCol int
	desc    bool
	// now is the time the Clocks of the rows are drawn at.
	now time.Time
}

// New returns a table with the columns.
func New(cols []Column, s Styles) Model {
	m := Model{cols: cols, styles: &s, sortCol: -1}
	m.layout()
	return m
}

// SetStyles replaces the styles (the background turned out light).
func (m *Model) SetStyles(s Styles) { m.styles = &s }

// SetNow sets the time the rows' Clocks are drawn at.
func (m *Model) SetNow(now time.Time) { m.now = now }

// Now is the time the rows' Clocks are drawn at: the last refresh's, or
// the clock's since.
func (m Model) Now() time.Time { return m.now }

// NextChange is when the next clocked cell on screen changes its text,
// the zero time when none will.
func (m Model) NextChange() time.Time {
	var next time.Time
	for i := m.offset; i < m.end(); i++ {
		r := m.rows[i]
		for _, c := range r.Clocks {
			next = Earliest(next, format.NextChange(c.At, m.now))
		}
	}
	return next
}

// Earliest is the earlier of a and b, where the zero time is never.
func Earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// SetColumns replaces the columns.
func (m *Model) SetColumns(cols []Column) {
	m.cols = cols
	m.layout()
}

// SetSize sets the width and the height, header included.
func (m *Model) SetSize(w, h int) {
	m.width, m.height = max(w, 0), max(h, 0)
	m.layout()
	m.clamp()
}

// SetRows replaces the rows. When the user has moved the cursor it stays on
// the row with the same Key; if that row is gone, no row is selected (Lost
// says which) until it comes back or the user moves. Otherwise the view
// stays at the top, so new rows at the top are seen rather than pushing
// the view down.
func (m *Model) SetRows(rows []Row) {
	if !m.moved {
		m.rows, m.cursor, m.offset = rows, 0, 0
		m.layout()
		m.clamp()
		return
	}
	sel := m.lost
	if sel == nil && m.cursor >= 0 && m.cursor < len(m.rows) {
		r := m.rows[m.cursor]
		sel = &r
	}
	m.rows, m.lost = rows, nil
	m.layout()
	if sel != nil && sel.Key != "" {
		m.lost = sel
		for i := range rows {
			if rows[i].Key == sel.Key {
				m.offset += i - m.cursor
				m.cursor, m.lost = i, nil
				break
			}
		}
	}
	m.clamp()
}

// Lost returns the selected row a refresh dropped, as it was last shown,
// and false if the selection holds.
func (m Model) Lost() (Row, bool) {
	if m.lost == nil {
		return Row{}, false
	}
	return *m.lost, true
}

// SetTitle renames column col: a header that says what the rows are
// sorted by when the arrow alone cannot.
func (m *Model) SetTitle(col int, title string) {
	if col >= 0 && col < len(m.cols) && m.cols[col].Title != title {
		m.cols = slices.Clone(m.cols)
		m.cols[col].Title = title
		m.layout()
	}
}

// SetSort marks column col (-1: none) as the sort column, with an arrow:
// ▼ when desc, else ▲.
func (m *Model) SetSort(col int, desc bool) {
	m.sortCol, m.desc = col, desc
	m.layout()
}

// Position says which rows are on screen: "41-60 of 340", or "0 rows".
// The cut line is no row of its own: it is not counted, so the total
// agrees with the pane's count of its items.
func (m Model) Position() string {
	// rowsIn counts the rows among the first n that are not the cut line.
	rowsIn := func(n int) int {
		c := 0
		for _, r := range m.rows[:n] {
			if r.Kind != Cut {
				c++
			}
		}
		return c
	}
	total := rowsIn(len(m.rows))
	if total == 0 {
		return "0 rows"
	}
	first := min(rowsIn(m.offset)+1, total)
	last := max(rowsIn(min(m.offset+m.bodyHeight(), len(m.rows))), first)
	return fmt.Sprintf("%d-%d of %d", first, last, total)
}

// RowAt returns the index of the row drawn on line y of the table (0 is
// the header), or -1.
func (m Model) RowAt(y int) int {
	if y < 1 || y > m.bodyHeight() {
		return -1
	}
	i := m.offset + y - 1
	if i >= len(m.rows) {
		return -1
	}
	return i
}

// Rows returns the rows.
func (m Model) Rows() []Row { return m.rows }

// Cursor returns the index of the selected row.
func (m Model) Cursor() int { return m.cursor }

// Offset returns the index of the first visible row.
func (m Model) Offset() int { return m.offset }

// Selected returns the selected row, if any: none while Lost.
func (m Model) Selected() (Row, bool) {
	if m.lost != nil || m.cursor < 0 || m.cursor >= len(m.rows) {
		return Row{}, false
	}
	return m.rows[m.cursor], true
}

// SetCursor moves the cursor to row i, as the user would.
func (m *Model) SetCursor(i int) {
	m.cursor, m.lost = i, nil
	m.moved = i > 0
	m.clamp()
}

// Update moves the cursor on navigation keys and reports whether it
// handled the key.
func (m Model) Update(msg tea.KeyPressMsg, k *keys.KeyMap) (Model, bool) {
	page := max(m.bodyHeight()-1, 1)
	switch {
	case key.Matches(msg, k.Up):
		m.cursor--
	case key.Matches(msg, k.Down):
		m.cursor++
	case key.Matches(msg, k.PageUp):
		m.cursor -= page
		m.offset -= page
	case key.Matches(msg, k.PageDown):
		m.cursor += page
		m.offset += page
	case key.Matches(msg, k.Top):
		m.cursor = 0
	case key.Matches(msg, k.Bottom):
		m.cursor = len(m.rows) - 1
	default:
		return m, false
	}
	m.clamp()
	m.moved, m.lost = m.cursor > 0, nil
	return m, true
}

// Pin keeps the selected row selected through refreshes, as a move of
// the user's does, even when it is the first.
func (m *Model) Pin() { m.moved = len(m.rows) > 0 }

// Top puts the cursor on the first row and lets the view follow the top
// again: a new sort order or filter starts from its first row.
func (m *Model) Top() {
	m.cursor, m.offset, m.moved, m.lost = 0, 0, false, nil
}

func (m Model) bodyHeight() int { return max(m.height-1, 0) }

func (m *Model) clamp() {
	m.cursor = min(max(m.cursor, 0), max(len(m.rows)-1, 0))
	h := m.bodyHeight()
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if h > 0 && m.cursor >= m.offset+h {
		m.offset = m.cursor - h + 1
	}
	m.offset = min(max(m.offset, 0), max(len(m.rows)-h, 0))
}

// layout gives every column its width, with one space between columns.
// A fixed column gets its declared width, and at least its title (with the
// sort arrow on the sort column: an arrow never costs a header its name). Flexible columns
// share what is left (see share). Columns whose MinTable exceeds the width
// get 0.
func (m *Model) layout() {
	m.widths = make([]int, len(m.cols))
	fixed, shown := 0, 0
	var flex []int
	for i, c := range m.cols {
		if c.MinTable > m.inner() {
			continue
		}
		shown++
		if c.Flex {
			flex = append(flex, i)
			continue
		}
		m.widths[i] = max(c.Width, m.titleWidth(i))
		fixed += m.widths[i]
	}
	fixed += max(shown-1, 0)
	m.share(flex, max(m.inner()-fixed, 0))
}

// titleWidth is the room column i's header needs: its title, and the
// sort arrow on the sort column.
func (m *Model) titleWidth(i int) int {
	w := ansi.StringWidth(m.cols[i].Title)
	if i == m.sortCol {
		w++
	}
	return w
}

// share gives the flexible columns cols the rest of the row. Each wants
// its widest cell (and its title with an arrow); a column that wants less
// than its share (in proportion to its declared Width) gets what it wants,
// and the others split what it leaves, so a value is cut only when every
// flexible column is full. What nobody wants goes to the last column.
func (m *Model) share(cols []int, rest int) {
	if len(cols) == 0 {
		return
	}
	want := make(map[int]int, len(cols))
	full := make(map[int]int, len(cols)) // a Ref column's want with registries
	for _, i := range cols {
		want[i] = m.titleWidth(i)
		full[i] = want[i]
	}
	for _, r := range m.rows {
		if r.Span || r.Kind == Cut {
			continue
		}
		for _, i := range cols {
			if i < len(r.Cells) {
				w := cellWidth(r.Cells[i])
				full[i] = max(full[i], w)
				if m.cols[i].Ref {
					w = unhostedWidth(r.Cells[i])
				}
				want[i] = max(want[i], w)
			}
		}
	}
	open := cols
	for len(open) > 0 {
		weight := 0
		for _, i := range open {
			weight += max(m.cols[i].Width, 1)
		}
		var still []int
		left := rest
		for _, i := range open {
			if want[i]*weight <= rest*max(m.cols[i].Width, 1) {
				m.widths[i] = want[i]
				left -= want[i]
				continue
			}
			still = append(still, i)
		}
		if len(still) == len(open) {
			// Every column wants more than its share: split by weight.
			for n, i := range open {
				w := max(m.cols[i].Width, 1)
				s := rest * w / weight
				weight -= w
				if n == len(open)-1 {
					s = rest
				}
				rest -= s
				m.widths[i] = max(s, 1)
			}
			return
		}
		open, rest = still, left
	}
	// What is left shows a Ref column's registries, then goes to the last.
	for _, i := range cols {
		more := min(max(full[i]-m.widths[i], 0), max(rest, 0))
		m.widths[i] += more
		rest -= more
	}
	m.widths[cols[len(cols)-1]] += max(rest, 0)
}

// unhostedWidth is the width of the image reference s without its first
// component, as Ref shortens it first ("…/prometheus/node-exporter:v1"):
// what a Ref column asks for before the rest of the row is served.
func unhostedWidth(s string) int {
	i := strings.Index(s, "/")
	if i < 0 {
		return cellWidth(s)
	}
	return 1 + cellWidth(s[i:])
}

// cellWidth is the width of a cell, fast for plain ASCII (most cells):
// share measures every cell of every row on each refresh.
func cellWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 || s[i] < 0x20 {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}

// View renders the header and the rows that fit, and nothing else: the
// cost does not grow with the number of rows.
func (m Model) View() string {
	if m.height <= 0 || m.width <= 0 {
		return ""
	}
	var b strings.Builder
	hdr := make([]string, len(m.cols))
	for i, c := range m.cols {
		hdr[i] = c.Title
		if i == m.sortCol {
			if m.desc {
				hdr[i] += "▼"
			} else {
				hdr[i] += "▲"
			}
		}
	}
	b.WriteString(m.styles.Header.Render(" " + m.line(hdr)))
	for i := m.offset; i < m.end(); i++ {
		b.WriteByte('\n')
		r := m.rows[i]
		var s string
		switch {
		case r.Kind == Cut:
			s = cutLine(r.Cells[0], m.inner())
		case r.Span:
			s = fit(r.Cells[0], m.inner(), false)
		case len(r.Clocks) > 0:
			cells := slices.Clone(r.Cells)
			for _, c := range r.Clocks {
				cells[c.Col] = c.Text(c.At, m.now)
			}
			s = m.line(cells)
		default:
			s = m.line(r.Cells)
		}
		st, mark := m.styles.Kinds[r.Kind], " "
		if i == m.cursor && m.lost == nil {
			// The marker shows the cursor where colour cannot (NO_COLOR, a
			// monochrome terminal): bold alone looks like the header.
			st, mark = m.styles.Selected, "▌"
		}
		b.WriteString(st.Render(mark + s))
	}
	return b.String()
}

// end is the index after the last row on screen.
func (m Model) end() int { return min(m.offset+m.bodyHeight(), len(m.rows)) }

// inner is the width of a row after the one-column cursor gutter.
func (m Model) inner() int { return max(m.width-1, 0) }

func (m Model) line(cells []string) string {
	var b strings.Builder
	first := true
	for i, w := range m.widths {
		if w == 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		c := ""
		if i < len(cells) {
			c = cells[i]
		}
		if m.cols[i].Ref {
			c = Ref(c, w)
		} else if m.cols[i].Middle {
			c = Middle(c, w)
		}
		b.WriteString(fit(c, w, m.cols[i].Right))
	}
	return fit(b.String(), m.inner(), false)
}

// fit truncates s to w cells with an ellipsis, and pads it to exactly w.
func fit(s string, w int, right bool) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		s = ansi.Truncate(s, w, "…")
		sw = ansi.StringWidth(s)
	}
	pad := strings.Repeat(" ", w-sw)
	if right {
		return pad + s
	}
	return s + pad
}

// Middle cuts s to w cells in its middle, marked with …, keeping its
// start and its end: a reference keeps its registry and as much of its
// last part (name and tag) as fits.
func Middle(s string, w int) string {
	if cellWidth(s) <= w || w < 5 {
		return s
	}
	r := []rune(s)
	tail := (w - 1) * 2 / 3
	if i := strings.LastIndex(s, "/"); i >= 0 {
		if last := len([]rune(s[i+1:])); last <= w-4 {
			tail = max(tail, last) // name:tag whole, and 3 cells of the start
		}
	}
	head := w - 1 - tail
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// Ref shortens the image reference s to w cells, giving up first what
// tells images apart least: the digest to its first 12 hex digits, then
// the registry and the path, component by component from the left
// ("…/node-exporter:v1.1.1"), then the middle of the name, keeping the
// tag whole when it takes at most half the room. What is still too long
// is cut in its middle (Middle).
func Ref(s string, w int) string {
	if cellWidth(s) <= w || w < 5 {
		return s
	}
	if at := strings.Index(s, "@"); at >= 0 {
		if c := strings.Index(s[at:], ":"); c >= 0 && len(s)-(at+c+1) > 12 {
			s = s[:at+c+1+12] + "…"
		}
	}
	parts := strings.Split(s, "/")
	for i := 1; cellWidth(s) > w && i < len(parts); i++ {
		s = "…/" + strings.Join(parts[i:], "/")
	}
	if cellWidth(s) <= w {
		return s
	}
	last := parts[len(parts)-1]
	if c := strings.LastIndex(last, ":"); c > 0 && !strings.Contains(last, "@") {
		tag := last[c:]
		if room := w - cellWidth(tag); cellWidth(tag) <= w/2 && room >= 3 {
			name := []rune(last[:c])
			keep := room - 1
			head := (keep + 1) / 2
			return string(name[:head]) + "…" + string(name[len(name)-(keep-head):]) + tag
		}
	}
	return Middle(last, w)
}

func cutLine(label string, w int) string {
	label = " " + label + " "
	lw := ansi.StringWidth(label)
	if lw+4 > w {
		return fit(strings.TrimSpace(label), w, false)
	}
	left := 3
	return strings.Repeat("─", left) + label + strings.Repeat("─", w-left-lw)
}

// Filter is the text filter of a table, typed after '/'.
type Filter struct {
	// Editing reports whether keys go to the filter.
	Editing bool
	// Value is the filter text.
	Value string
	lower string
}

// Start begins editing.
func (f *Filter) Start() { f.Editing = true }

// Key edits the filter while Editing: FilterDone (enter) keeps the text,
// ClearFilter (esc) clears it, FilterBackspace deletes a character and
// FilterErase the text. It reports whether the value changed.
func (f *Filter) Key(msg tea.KeyPressMsg, k *keys.KeyMap) bool {
	old := f.Value
	switch {
	case key.Matches(msg, k.FilterDone):
		f.Editing = false
	case key.Matches(msg, k.ClearFilter):
		f.Editing = false
		f.Value = ""
	case key.Matches(msg, k.FilterBackspace):
		if r := []rune(f.Value); len(r) > 0 {
			f.Value = string(r[:len(r)-1])
		}
	case key.Matches(msg, k.FilterErase):
		f.Value = ""
	default:
		if msg.Text != "" {
			f.Value += msg.Text
		}
	}
	f.lower = strings.ToLower(f.Value)
	return f.Value != old
}

// Clear drops the filter.
func (f *Filter) Clear() {
	f.Editing, f.Value, f.lower = false, "", ""
}

// Active reports whether the filter restricts the rows.
func (f Filter) Active() bool { return f.Value != "" }

// Match reports whether s contains the filter text, ignoring case.
func (f Filter) Match(s string) bool {
	if f.lower == "" {
		return true
	}
	return strings.Contains(strings.ToLower(s), f.lower)
}

// View renders the filter line, "" when there is no filter.
func (f Filter) View(label lipgloss.Style) string {
	switch {
	case f.Editing:
		return label.Render("filter: ") + f.Value + "█"
	case f.Value != "":
		return label.Render("filter: ") + f.Value + label.Render("  (/ edit · esc clear)")
	}
	return ""
}

// StylesFrom picks the table's styles from the dashboard's.
func StylesFrom(s style.Styles) Styles {
	g := Styles{Header: s.Header, Selected: s.Selected}
	g.Kinds[Normal] = lipgloss.NewStyle()
	g.Kinds[Dim] = s.Faint
	g.Kinds[Remove] = s.Remove
	g.Kinds[Warn] = s.Warn
	g.Kinds[Group] = s.Group
	g.Kinds[Cut] = s.CutLine
	return g
}

// Height returns the table's height, header included.
func (m Model) Height() int { return m.height }

// ColumnAt returns the index of the column drawn at cell x of a row (the
// cursor gutter is cell 0), or -1 for the gutter, a gap or past the end.
func (m Model) ColumnAt(x int) int {
	at := 1
	for i, w := range m.widths {
		if w == 0 {
			continue
		}
		if x >= at && x < at+w {
			return i
		}
		at += w + 1
	}
	return -1
}
