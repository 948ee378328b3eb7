package grid

import (
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
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func TestPaneHandleKey(t *testing.T) {
	tests := []struct {
		name        string
		keys        []string
		own         bool
		wantFilter  string
		wantEditing bool
		wantSorts   int
		wantOwn     int
		wantCursor  int
		// wantHeight is the table's height in a pane 10 high with 2 lines
		// of chrome.
		wantHeight int
	}{
		{name: "the sort key cycles the order", keys: []string{"s", "s"}, wantSorts: 2, wantHeight: 8},
		{name: "while the filter is typed the sort key is text", keys: []string{"/", "s"}, wantFilter: "s", wantEditing: true, wantHeight: 7},
		{name: "a kept filter still takes its line", keys: []string{"/", "x", "enter"}, wantFilter: "x", wantHeight: 7},
		{name: "an empty filter gives its line back once typed", keys: []string{"/", "enter"}, wantHeight: 8},
		{name: "the pane's own keys come before navigation", keys: []string{"down"}, own: true, wantOwn: 1, wantHeight: 8},
		{name: "other keys move the cursor", keys: []string{"down", "down"}, wantCursor: 2, wantHeight: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPane(keys.Default(false), style.Styles{}, []Column{{Title: "N", Width: 8}}, 2)
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
			if wantRebuilds := len([]rune(tt.wantFilter)); rebuilds != wantRebuilds {
				t.Errorf("%d rebuilds, want one per filter change (%d)", rebuilds, wantRebuilds)
			}
			if sorts != tt.wantSorts || owned != tt.wantOwn || p.Grid.Cursor() != tt.wantCursor {
				t.Errorf("sorts=%d own=%d cursor=%d, want %d %d %d", sorts, owned, p.Grid.Cursor(), tt.wantSorts, tt.wantOwn, tt.wantCursor)
			}
			if p.Grid.Height() != tt.wantHeight {
				t.Errorf("table height %d, want %d", p.Grid.Height(), tt.wantHeight)
			}
		})
	}
}

func TestPaneWithFilter(t *testing.T) {
	p := NewPane(keys.Default(false), style.Styles{}, nil, 0)
	if got := p.WithFilter([]string{"head"}); len(got) != 1 {
		t.Errorf("no filter added a line: %q", got)
	}
	p.Filter.Start()
	if got := p.WithFilter([]string{"head"}); len(got) != 2 || got[0] != "head" {
		t.Errorf("an edited filter must follow the head: %q", got)
	}
}
