package grid

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/tui/keys"
)

func rows(n int) []Row {
	r := make([]Row, n)
	for i := range r {
		r[i] = Row{Cells: []string{fmt.Sprintf("row-%04d", i), "x"}, Key: fmt.Sprint(i)}
	}
	return r
}

func TestView(t *testing.T) {
	cols := []Column{{Title: "NAME", Width: 10, Flex: true}, {Title: "V", Width: 3, Right: true}}
	tests := []struct {
		name      string
		n         int
		down      int
		wantLines int
		wantFirst string
		wantLast  string
	}{
		{"only the rows that fit are rendered", 5000, 0, 5, "row-0000", "row-0003"},
		{"the view follows the cursor down", 5000, 10, 5, "row-0007", "row-0010"},
		{"fewer rows than fit render all", 2, 0, 3, "row-0000", "row-0001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(cols, Styles{})
			m.SetSize(20, 5)
			m.SetRows(rows(tt.n))
			for range tt.down {
				m, _ = m.Update(tea.KeyPressMsg{Code: tea.KeyDown}, defaultKeys())
			}
			lines := strings.Split(m.View(), "\n")
			if len(lines) != tt.wantLines {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), tt.wantLines, m.View())
			}
			if !strings.HasPrefix(lines[1][len(lines[1])-len(strings.TrimLeft(lines[1], " ▌")):], tt.wantFirst) ||
				!strings.HasPrefix(strings.TrimLeft(lines[len(lines)-1], " ▌"), tt.wantLast) {
				t.Errorf("rows %q..%q, want %s..%s", lines[1], lines[len(lines)-1], tt.wantFirst, tt.wantLast)
			}
			for _, l := range lines {
				if len([]rune(l)) != 20 {
					t.Errorf("line %q is not 20 cells wide", l)
				}
			}
		})
	}
}

// TestCursorRowHasAMarker pins issue 12 bug 9: without colour (NO_COLOR)
// the cursor row is told from the others by a marker, not by style alone.
func TestCursorRowHasAMarker(t *testing.T) {
	m := New([]Column{{Title: "N", Width: 8}}, Styles{})
	m.SetSize(12, 5)
	m.SetRows(rows(3))
	m, _ = m.Update(tea.KeyPressMsg{Code: tea.KeyDown}, defaultKeys())
	lines := strings.Split(m.View(), "\n")
	for i, l := range lines[1:] {
		if marked := strings.HasPrefix(l, "▌"); marked != (i == 1) {
			t.Errorf("row %d %q: marked %v, want the cursor row (1) alone marked", i, l, marked)
		}
	}
}

func TestSetRowsKeepsCursorOnSameKey(t *testing.T) {
	m := New([]Column{{Title: "N", Width: 8}}, Styles{})
	m.SetSize(8, 10)
	m.SetRows(rows(20))
	m.SetCursor(5)
	r := rows(20)
	m.SetRows(append([]Row{{Cells: []string{"new"}, Key: "new"}}, r...))
	if sel, _ := m.Selected(); sel.Key != "5" {
		t.Errorf("cursor on %q after a row was inserted above, want 5", sel.Key)
	}
}

func TestFilter(t *testing.T) {
	var f Filter
	f.Start()
	for _, r := range "NgInX" {
		f.Key(tea.KeyPressMsg{Code: r, Text: string(r)}, defaultKeys())
	}
	f.Key(tea.KeyPressMsg{Code: tea.KeyEnter}, defaultKeys())
	if f.Editing || !f.Match("docker.io/library/nginx:1.25") || f.Match("redis") {
		t.Errorf("filter %q: editing=%v, matches case-insensitively?", f.Value, f.Editing)
	}
	f.Start()
	f.Key(tea.KeyPressMsg{Code: tea.KeyEscape}, defaultKeys())
	if f.Active() {
		t.Errorf("esc while editing must clear the filter, got %q", f.Value)
	}
}

// TestNewRowsStayInSight pins issue 12 bug 1: rows arriving at the top
// (the newest pass, say) are seen while the user has not moved the cursor;
// once they have, the cursor stays on its row; sort and filter go back to
// the top.
func TestNewRowsStayInSight(t *testing.T) {
	named := func(keys ...string) []Row {
		out := make([]Row, len(keys))
		for i, k := range keys {
			out[i] = Row{Key: k, Cells: []string{k}}
		}
		return out
	}
	m := New([]Column{{Title: "N", Width: 8}}, Styles{})
	m.SetSize(12, 4)
	m.SetRows(named("p3", "p2", "p1"))
	m.SetRows(named("p5", "p4", "p3", "p2", "p1"))
	if sel, _ := m.Selected(); sel.Key != "p5" || !strings.Contains(m.View(), "p5") {
		t.Errorf("cursor on %s, view:\n%s\nwant the newest row p5 in sight", sel.Key, m.View())
	}
	m, _ = m.Update(tea.KeyPressMsg{Code: tea.KeyDown}, defaultKeys())
	m.SetRows(named("p6", "p5", "p4", "p3", "p2", "p1"))
	if sel, _ := m.Selected(); sel.Key != "p4" {
		t.Errorf("after the user moved to p4, a refresh put the cursor on %s", sel.Key)
	}
	m.Top()
	m.SetRows(named("p7", "p6", "p5"))
	if sel, _ := m.Selected(); sel.Key != "p7" {
		t.Errorf("after Top the cursor is on %s, want p7", sel.Key)
	}
}

func defaultKeys() *keys.KeyMap {
	k := keys.Default(false)
	return &k
}

func TestPositionDoesNotCountTheCutLine(t *testing.T) {
	m := New([]Column{{Title: "N", Width: 8}}, Styles{})
	m.SetSize(12, 5) // a header and four rows on screen
	r := rows(6)
	r = append(r[:2], append([]Row{{Kind: Cut, Span: true, Cells: []string{"cut line"}, Key: "cut"}}, r[2:]...)...)
	m.SetRows(r)
	if got := m.Position(); got != "1-3 of 6" {
		t.Errorf("at the top, with the cut line on screen: %q, want %q", got, "1-3 of 6")
	}
	m.SetCursor(6) // the last row: the view scrolls to it
	if got := m.Position(); got != "3-6 of 6" {
		t.Errorf("at the bottom: %q, want %q", got, "3-6 of 6")
	}
}

// TestASelectedRowThatGoesSelectsNoOther pins issue 41's first finding: a
// refresh that drops the selected row leaves no row selected (the row in
// its place is not the one the user chose, and ctrl+d on it would offer
// another image), says which row went, and selects it again when it comes
// back; a move of the cursor selects as usual.
func TestASelectedRowThatGoesSelectsNoOther(t *testing.T) {
	without := func(rs []Row, key string) []Row {
		return slices.DeleteFunc(slices.Clone(rs), func(r Row) bool { return r.Key == key })
	}
	m := New([]Column{{Title: "N", Width: 8}}, Styles{})
	m.SetSize(12, 8)
	m.SetRows(rows(5))
	m.SetCursor(2)
	m.SetRows(without(rows(5), "2"))
	if r, ok := m.Selected(); ok {
		t.Errorf("after its row went, the selection is %q; want none", r.Key)
	}
	if r, ok := m.Lost(); !ok || r.Cells[0] != "row-0002" {
		t.Errorf("Lost() = %v, %v; want row-0002, true", r.Cells, ok)
	}
	if v := m.View(); strings.Contains(v, "▌") {
		t.Errorf("a row is marked as the cursor while none is selected:\n%s", v)
	}
	m.SetRows(without(without(rows(5), "2"), "3")) // a later refresh: still gone
	if r, ok := m.Selected(); ok {
		t.Errorf("a second refresh selected %q; want none while row 2 is gone", r.Key)
	}
	m.SetRows(rows(5))
	if r, ok := m.Selected(); !ok || r.Key != "2" {
		t.Errorf("row 2 came back; selection %q, %v; want 2", r.Key, ok)
	}
	m.SetRows(without(rows(5), "2"))
	m, _ = m.Update(tea.KeyPressMsg{Code: tea.KeyDown}, defaultKeys())
	if _, ok := m.Lost(); ok {
		t.Error("still lost after the user moved the cursor")
	}
	if _, ok := m.Selected(); !ok {
		t.Error("nothing selected after the user moved the cursor")
	}
}

// TestRefKeepsWhatTellsImagesApart pins issue 41: at the width an 80-column
// Images pane gives the IMAGE column, references shorten by their digest,
// registry and path first, and keep their tag; node-exporter and
// cert-manager stay apart.
func TestRefKeepsWhatTellsImagesApart(t *testing.T) {
	tests := []struct {
		ref  string
		w    int
		want string
	}{
		{"quay.io/prometheus/node-exporter:v1.1.1", 40, "quay.io/prometheus/node-exporter:v1.1.1"},
		{"quay.io/prometheus/node-exporter:v1.1.1", 25, "…/node-exporter:v1.1.1"},
		{"quay.io/jetstack/cert-manager-controller:v1.1.1", 25, "cert-mana…ntroller:v1.1.1"},
		{"quay.io/prometheus/node-exporter:v1.1.1", 17, "node-…rter:v1.1.1"},
		{"registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097", 40, "…/pause@sha256:7031c1b28338…"},
	}
	for _, tt := range tests {
		got := Ref(tt.ref, tt.w)
		if got != tt.want {
			t.Errorf("Ref(%q, %d) = %q, want %q", tt.ref, tt.w, got, tt.want)
		}
		if cellWidth(got) > tt.w {
			t.Errorf("Ref(%q, %d) = %q: %d cells, more than %d", tt.ref, tt.w, got, cellWidth(got), tt.w)
		}
	}
	a, b := Ref("quay.io/prometheus/node-exporter:v1.1.1", 17), Ref("quay.io/jetstack/cert-manager:v1.1.1", 17)
	if a == b || !strings.HasSuffix(a, ":v1.1.1") || !strings.HasPrefix(b, "cert") {
		t.Errorf("at 17 cells %q and %q do not tell node-exporter and cert-manager apart, tag kept", a, b)
	}
}
