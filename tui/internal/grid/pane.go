package grid

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Pane is what every table pane of the dashboard holds besides its data:
// the key map, the styles, the table, its filter and the pane's size. The
// Images, Containers, Cgroups and Events panes embed it, so sizing, the
// palette switch and the shared keys are written once.
type Pane struct {
	Keys   keys.KeyMap
	Styles style.Styles
	Grid   Model
	Filter Filter
	Width  int
	Height int
	// Chrome is the number of lines the pane draws besides the table and
	// the filter line (a summary above it, events under it).
	Chrome int
}

// NewPane returns a pane with an empty table of the columns, chrome lines
// apart from the table.
func NewPane(k keys.KeyMap, st style.Styles, cols []Column, chrome int) Pane {
	return Pane{Keys: k, Styles: st, Grid: New(cols, StylesFrom(st)), Chrome: chrome}
}

// SetStyles switches the palette.
func (p *Pane) SetStyles(st style.Styles) {
	p.Styles = st
	p.Grid.SetStyles(StylesFrom(st))
}

// SetSize sets the pane's size.
func (p *Pane) SetSize(w, h int) {
	p.Width, p.Height = w, h
	p.Resize()
}

// Resize gives the table the pane's height less the chrome and the filter
// line, when the filter is shown. Call it when Chrome changes.
func (p *Pane) Resize() {
	h := p.Height - p.Chrome
	if p.Filter.Editing || p.Filter.Active() {
		h--
	}
	p.Grid.SetSize(p.Width, max(h, 0))
}

// Capturing reports whether the pane takes every key (the filter is being
// typed).
func (p Pane) Capturing() bool { return p.Filter.Editing }

// HandleKey handles a key press as every table pane does, in this order:
// while the filter is typed every key goes to it, and rebuild runs when
// its text changes; the filter key starts it; the sort key runs sort,
// unless sort is nil (a pane with one order); own, unless nil, takes the
// pane's own keys and reports whether it took k; any other key moves the
// cursor.
func (p *Pane) HandleKey(k tea.KeyPressMsg, rebuild, sort func(), own func(tea.KeyPressMsg) bool) {
	switch {
	case p.Filter.Editing:
		if p.Filter.Key(k) {
			p.Grid.Top() // a new filter starts from its first match
			rebuild()
		}
		p.Resize()
	case key.Matches(k, p.Keys.Filter):
		p.Filter.Start()
		p.Resize()
	case sort != nil && key.Matches(k, p.Keys.Sort):
		p.Grid.Top() // a new order starts from its first row
		sort()
	case own != nil && own(k):
	default:
		p.Grid, _ = p.Grid.Update(k, p.Keys)
	}
}

// WithFilter appends the filter line to parts, when there is one to show.
func (p Pane) WithFilter(parts []string) []string {
	if f := p.Filter.View(p.Styles.Label); f != "" {
		parts = append(parts, f)
	}
	return parts
}
