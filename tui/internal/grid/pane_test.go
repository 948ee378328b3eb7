package grid

import (
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

func press(s string) tea.KeyPressMsg {
	switch s {
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func TestPaneHandleKey(t *testing.T) {
	tests := []struct {
		name         string
		keys         []string
		own          bool
		wantFilter   string
		wantEditing  bool
		wantSorts    int
		wantOwn      int
		wantCursor   int
		wantReversed bool
	}{
		{name: "the sort key cycles the order", keys: []string{"s", "s"}, wantSorts: 2},
		{name: "while the filter is typed the sort key is text", keys: []string{"/", "s"}, wantFilter: "s", wantEditing: true},
		{name: "a kept filter stays", keys: []string{"/", "x", "enter"}, wantFilter: "x"},
		{name: "esc clears a kept filter", keys: []string{"/", "x", "enter", "esc"}, wantFilter: ""},
		{name: "the pane's own keys come before navigation", keys: []string{"down"}, own: true, wantOwn: 1},
		{name: "other keys move the cursor", keys: []string{"down", "down"}, wantCursor: 2},
		{name: "j and k move the cursor as in vim", keys: []string{"j", "j", "j", "k"}, wantCursor: 2},
		{name: "G goes to the bottom, g to the top", keys: []string{"G"}, wantCursor: 4},
		{name: "g after G goes back to the top", keys: []string{"G", "g"}, wantCursor: 0},
		{name: "S reverses the order, and s starts the next one unreversed", keys: []string{"S"}, wantReversed: true},
		{name: "s after S drops the reversal", keys: []string{"S", "s"}, wantSorts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPane(keys.Default(false), style.Styles{}, []Column{{Title: "N", Width: 8}}, 2, 1)
			p.SetSize(20, 10)
			p.Grid.SetRows(rows(5))
			sorts, owned, rebuilds := 0, 0, 0
			var own func(tea.KeyPressMsg) bool
			if tt.own {
				own = func(tea.KeyPressMsg) bool { owned++; return true }
			}
			for _, k := range tt.keys {
				p.HandleKey(press(k), func() { rebuilds++ }, func() { sorts++ }, own)
			}
			if p.Filter.Value != tt.wantFilter || p.Filter.Editing != tt.wantEditing || p.Capturing() != tt.wantEditing {
				t.Errorf("filter %q editing=%v capturing=%v, want %q editing=%v", p.Filter.Value, p.Filter.Editing, p.Capturing(), tt.wantFilter, tt.wantEditing)
			}
			if p.Reversed != tt.wantReversed {
				t.Errorf("reversed = %v, want %v", p.Reversed, tt.wantReversed)
			}
			if sorts != tt.wantSorts || owned != tt.wantOwn || p.Grid.Cursor() != tt.wantCursor {
				t.Errorf("sorts=%d own=%d cursor=%d, want %d %d %d", sorts, owned, p.Grid.Cursor(), tt.wantSorts, tt.wantOwn, tt.wantCursor)
			}
			// The pane is 10 high: 2 lines of chrome, the info line.
			if p.Grid.Height() != 7 {
				t.Errorf("table height %d, want 7", p.Grid.Height())
			}
		})
	}
}

func TestPaneInfoLine(t *testing.T) {
	p := NewPane(keys.Default(false), style.Styles{}, []Column{{Title: "N", Width: 8}}, 0, 0)
	p.SetSize(60, 6) // 4 rows on screen under the header
	p.Grid.SetRows(rows(10))
	if got := p.WithFilter([]string{"head"}); len(got) != 2 || got[0] != "head" || !strings.Contains(got[1], "1-4 of 10") {
		t.Errorf("the info line must follow the head and say which rows show: %q", got)
	}
	p.Grid, _ = p.Grid.Update(press("G"), p.Keys)
	if got := p.Info(); !strings.Contains(got, "7-10 of 10") {
		t.Errorf("at the bottom the info line says %q, want 7-10 of 10", got)
	}
	p.Filter.Start()
	for _, r := range "ab" {
		p.Filter.Key(press(string(r)), p.Keys)
	}
	p.Matched, p.Total = 3, 10
	if got := p.Info(); !strings.Contains(got, "filter: ab") || !strings.Contains(got, "3/10 match") {
		t.Errorf("the info line with a filter is %q, want the filter and 3/10 match", got)
	}
}

func TestPaneClickSelectsRow(t *testing.T) {
	p := NewPane(keys.Default(false), style.Styles{}, []Column{{Title: "N", Width: 8}}, 2, 1)
	p.SetSize(60, 10)
	p.Grid.SetRows(rows(10))
	// Line 0 is the chrome above, 1 the info line, 2 the header, 3 the
	// first row.
	p.ClickRow(5)
	if p.Grid.Cursor() != 2 {
		t.Errorf("a click on line 5 put the cursor on row %d, want 2", p.Grid.Cursor())
	}
	p.ClickRow(2) // the header: no row
	if p.Grid.Cursor() != 2 {
		t.Errorf("a click on the header moved the cursor to %d", p.Grid.Cursor())
	}
}

// table is a Table over n rows that counts its rebuilds and takes x as
// its own key.
type table struct {
	Pane
	rebuilds, own int
}

func (t *table) Rebuild() { t.rebuilds++ }

func (t *table) TakeKey(k tea.KeyPressMsg) bool {
	if k.Text == "x" {
		t.own++
		return true
	}
	return false
}

func newTable() *table {
	orders := []Order{{Name: "name", Col: 0}, {Name: "size", Col: 1, Desc: true}}
	t := &table{Pane: NewPane(keys.Default(false), style.Styles{}, []Column{{Title: "NAME", Width: 8}, {Title: "SIZE", Width: 6}}, 0, 0, orders...)}
	t.SetSize(40, 10)
	t.Grid.SetRows(rows(5))
	return t
}

func TestTableSortsAndClicks(t *testing.T) {
	tb := newTable()
	Update(tb, press("s"))
	if tb.Sort != 1 || tb.Order != "size" || tb.rebuilds != 1 {
		t.Errorf("s: sort %d order %q rebuilds %d, want 1, size, 1", tb.Sort, tb.Order, tb.rebuilds)
	}
	if !strings.Contains(tb.Grid.View(), "SIZE▼") {
		t.Errorf("the size order's arrow points down on SIZE:\n%s", tb.Grid.View())
	}
	Update(tb, press("s"))
	if tb.Sort != 0 {
		t.Errorf("s cycles back to the first order, got %d", tb.Sort)
	}
	Update(tb, press("x"))
	if tb.own != 1 {
		t.Errorf("the pane's own key did not reach it")
	}
	// The header is line 1 (the info line is line 0); SIZE starts at cell 10.
	Click(tb, 11, 1)
	if tb.Sort != 1 {
		t.Errorf("a click on SIZE sorts by size, got order %d", tb.Sort)
	}
	Click(tb, 11, 1)
	if tb.Sort != 1 || !tb.Reversed {
		t.Errorf("a second click on SIZE reverses it: order %d reversed %v", tb.Sort, tb.Reversed)
	}
	Click(tb, 3, 4) // the third row
	if tb.Grid.Cursor() != 2 {
		t.Errorf("a click on line 4 selects row 2, got %d", tb.Grid.Cursor())
	}
	one := &table{Pane: NewPane(keys.Default(false), style.Styles{}, []Column{{Title: "N", Width: 8}}, 0, 0, Order{Desc: true})}
	one.SetSize(40, 10)
	Update(one, press("s"))
	if one.rebuilds != 0 || one.Order != "" {
		t.Errorf("a pane with one order has no sort key: rebuilds %d order %q", one.rebuilds, one.Order)
	}
}

// TestSortAndFilterKeepTheSelectedRow pins issue 41: the selected row stays
// selected through a new order, a reversal, and a filter it still matches;
// a filter that hides it selects its first match instead, and the info line
// names a row a refresh dropped.
func TestSortAndFilterKeepTheSelectedRow(t *testing.T) {
	p := NewPane(keys.Default(false), style.Styles{}, []Column{{Title: "N", Width: 12}}, 2, 1)
	p.SetSize(40, 10)
	all := rows(5)
	desc := false
	rebuild := func() {
		var out []Row
		for _, r := range all {
			if p.Filter.Match(r.Cells[0]) {
				out = append(out, r)
			}
		}
		if desc != p.Reversed {
			slices.Reverse(out)
		}
		p.Grid.SetRows(out)
	}
	sort := func() { desc = !desc; rebuild() }
	rebuild()
	p.Grid.SetCursor(1) // row-0001
	selected := func() string { r, _ := p.Grid.Selected(); return r.Key }
	for _, k := range []string{"s", "S"} {
		p.HandleKey(press(k), rebuild, sort, nil)
		if got := selected(); got != "1" {
			t.Errorf("after %q the selection is %q; want row 1 still", k, got)
		}
	}
	for _, k := range []string{"/", "0", "0"} {
		p.HandleKey(press(k), rebuild, sort, nil)
	}
	if got := selected(); got != "1" {
		t.Errorf("after a filter row 1 still matches, the selection is %q; want 1", got)
	}
	p.HandleKey(press("3"), rebuild, sort, nil) // "003": row 1 hidden
	if got := selected(); got != "3" {
		t.Errorf("after a filter that hides row 1, the selection is %q; want the match, 3", got)
	}
	p.HandleKey(press("enter"), rebuild, sort, nil)
	p.HandleKey(press("esc"), rebuild, sort, nil)
	if got := selected(); got != "3" {
		t.Errorf("after the filter was cleared, the selection is %q; want 3 still", got)
	}
	all = slices.DeleteFunc(all, func(r Row) bool { return r.Key == "3" })
	rebuild()
	if info := p.Info(); !strings.Contains(info, "row-0003 is gone") {
		t.Errorf("info line %q does not say the selected row went", info)
	}
}
