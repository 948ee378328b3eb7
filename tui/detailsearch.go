package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/style"
)

// detailSearch is what a details modal adds to its lines: a search
// (/, n for the next match) and the raw object as JSON (v).
type detailSearch struct {
	input textinput.Model
	query string
	// at is the index of the match shown, among the lines that match.
	at int
	// raw is the object as indented JSON; rawOn shows it instead of the
	// details.
	raw   []string
	rawOn bool
}

// openDetail opens the details of a row.
func openDetail(d feed.Detail, st *style.Styles) *modal {
	in := textinput.New()
	in.Prompt = "/"
	s := textinput.DefaultStyles(st.Dark)
	s.Cursor.Blink = false
	in.SetStyles(s)
	md := &modal{kind: modalDetail, title: d.Title, lines: d.Lines, search: detailSearch{input: in}}
	if d.Raw != nil {
		if b, err := json.MarshalIndent(d.Raw, "", "  "); err == nil {
			md.search.raw = strings.Split(string(b), "\n")
		} else {
			md.search.raw = []string{"raw view: " + err.Error()}
		}
	}
	return md
}

// matches are the indexes of the shown lines that hold the query.
func (d *modal) matches(inner int) []int {
	if d.search.query == "" {
		return nil
	}
	q := strings.ToLower(d.search.query)
	var out []int
	for i, l := range d.shown(inner) {
		if strings.Contains(strings.ToLower(l), q) {
			out = append(out, i)
		}
	}
	return out
}

// detailKey handles the keys a details modal adds, and reports whether it
// took k: while the search is typed every key goes to it (enter keeps it
// and shows the first match, esc drops it); / starts it, n shows the next
// match, esc drops a search before it closes the modal, and v switches
// between the details and the raw JSON.
func (d *modal) detailKey(k tea.KeyPressMsg, m Model) (tea.Cmd, bool) {
	s := &d.search
	km := m.keys
	switch {
	case s.input.Focused():
		switch {
		case key.Matches(k, km.FilterDone):
			s.input.Blur()
			s.query, s.at = s.input.Value(), 0
			d.showMatch(m)
		case key.Matches(k, km.ClearFilter):
			s.input.Blur()
		default:
			var cmd tea.Cmd
			s.input, cmd = s.input.Update(k)
			return cmd, true
		}
	case key.Matches(k, km.Filter):
		s.input.Reset()
		return s.input.Focus(), true
	case key.Matches(k, km.SearchNext) && s.query != "":
		s.at++
		d.showMatch(m)
	case key.Matches(k, km.ClearFilter) && s.query != "":
		s.query = ""
	case key.Matches(k, km.Raw) && s.raw != nil:
		s.rawOn = !s.rawOn
		d.offset = 0
		d.showMatch(m)
	default:
		return nil, false
	}
	return nil, true
}

// showMatch scrolls to the match at (wrapping around).
func (d *modal) showMatch(m Model) {
	inner := previewWidth(m.width)
	ms := d.matches(inner)
	if len(ms) == 0 {
		return
	}
	d.search.at %= len(ms)
	d.offset = min(ms[d.search.at], max(len(d.shown(inner))-d.height(m.height, inner), 0))
}

// searchFoot is the details footer's word on the search and the raw
// view.
func (d *modal) searchFoot(inner int) string {
	s := d.search
	var parts []string
	switch {
	case s.input.Focused():
		return s.input.View() + "  enter find · esc cancel"
	case s.query != "":
		n := len(d.matches(inner))
		if n == 0 {
			parts = append(parts, fmt.Sprintf("/%s: no match", s.query))
		} else {
			parts = append(parts, fmt.Sprintf("/%s: match %d of %d · n next · esc clear", s.query, s.at%n+1, n))
		}
	default:
		parts = append(parts, "/ search")
	}
	if s.raw != nil {
		if s.rawOn {
			parts = append(parts, "v details")
		} else {
			parts = append(parts, "v raw JSON")
		}
	}
	return strings.Join(parts, " · ")
}
