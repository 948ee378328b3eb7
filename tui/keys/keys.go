// Package keys declares the dashboard's one key map. It is built once by
// Default and passed down, so help and dispatch never disagree: no key is
// matched by its raw string anywhere else.
package keys

import (
	"fmt"

	"charm.land/bubbles/v2/key"
)

// MaxPanes is how many panes the number keys reach (1-9).
const MaxPanes = 9

// KeyMap is every binding of the dashboard: global ones, table navigation,
// and those of the modals.
type KeyMap struct {
	NextPane key.Binding
	PrevPane key.Binding
	// Panes jumps to a pane by number: Panes[i] selects the (i+1)-th
	// registered pane. The root uses as many as it has panes.
	Panes []key.Binding
	Help  key.Binding
	Quit  key.Binding
	// Interrupt (ctrl+c) quits from anywhere, even while a filter is
	// typed or a modal is open.
	Interrupt key.Binding

	ForceImages     key.Binding
	ForceContainers key.Binding
	ReclaimAll      key.Binding
	// ReadOnly stands in the help where the destructive keys would be, when
	// they are disabled.
	ReadOnly key.Binding
	Pause    key.Binding
	// DryRun previews a full pass: D, since d is describe (Drill) as in
	// k9s.
	DryRun key.Binding
	// StopPass stops the pass this dashboard applied after the item in
	// flight.
	StopPass key.Binding
	Filter   key.Binding
	// ClearFilter (esc) drops the filter of the table shown.
	ClearFilter key.Binding
	Sort        key.Binding
	// Reverse reverses the sort order.
	Reverse key.Binding
	Refresh key.Binding
	Freeze  key.Binding
	// Faster and Slower shorten and lengthen the refresh interval, - and
	// + as btop's update timer; Faster carries the help of both.
	Faster key.Binding
	Slower key.Binding
	// Copy copies the selected row's ID to the clipboard (OSC 52).
	Copy key.Binding
	// Drill opens the selected row's details: enter, and d as k9s's
	// describe.
	Drill key.Binding
	// SearchNext shows the next match of a search in the details; Raw
	// switches the details to the raw object as JSON, and on a row opens
	// them so (y as k9s's YAML; inside a preview y is its yes instead).
	SearchNext key.Binding
	Raw        key.Binding
	// RemoveOne previews the removal of the selected image or dead
	// container alone (k9s ctrl+d, lazydocker d); y applies it.
	RemoveOne key.Binding
	// Journal opens the journal view (k9s l, lazydocker's logs).
	Journal key.Binding
	// Command opens the command line (k9s :): `:images redis`.
	Command key.Binding

	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding
	// Toggle collapses or expands a tree node; Expand and Collapse only
	// open or only close it.
	Toggle   key.Binding
	Expand   key.Binding
	Collapse key.Binding
	// ExpandAll and CollapseAll act on the whole tree.
	ExpandAll   key.Binding
	CollapseAll key.Binding

	// FilterDone ends typing a filter and keeps it; FilterBackspace and
	// FilterErase delete a character and the whole text. esc
	// (ClearFilter) drops it.
	FilterDone      key.Binding
	FilterBackspace key.Binding
	FilterErase     key.Binding

	// Confirm applies a destructive modal's plan: the y of the y/n
	// question the modal asks (k9s's y, YAML, is Raw on a row). It is y
	// alone, never enter: enter closes the view-only modals (nothing to remove, an
	// error, read-only), and a key that sometimes closes and sometimes
	// deletes teaches operators to delete.
	Confirm key.Binding
	// Cancel closes a modal without applying anything; enter is one of its
	// keys, so enter never removes anything.
	Cancel key.Binding
	// QuitAnyway and Stay answer the question asked before quitting while
	// a pass is in flight.
	QuitAnyway key.Binding
	Stay       key.Binding
}

// Default returns the key map. The navigation keys are those of vim, k9s
// and lazydocker (j/k, g/G); the GC actions sit on keys no navigation
// convention uses (i, x, R). In read-only mode the destructive keys are
// disabled and the ReadOnly binding takes their place in the help.
func Default(readOnly bool) KeyMap {
	k := KeyMap{
		NextPane:        key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevPane:        key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev pane")),
		Help:            key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:            key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Interrupt:       key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		ForceImages:     key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "image GC")),
		ForceContainers: key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "container GC")),
		ReclaimAll:      key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "reclaim all")),
		ReadOnly:        key.NewBinding(key.WithKeys("i", "x", "R"), key.WithHelp("i/x/R", "read-only")),
		Pause:           key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume")),
		DryRun:          key.NewBinding(key.WithKeys("D"), key.WithHelp("D", "dry-run")),
		StopPass:        key.NewBinding(key.WithKeys("X"), key.WithHelp("X", "stop pass")),
		Filter:          key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		ClearFilter:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
		Sort:            key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort column")),
		Reverse:         key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "reverse sort")),
		Refresh:         key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		Freeze:          key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "freeze")),
		Faster:          key.NewBinding(key.WithKeys("-", "_"), key.WithHelp("+/-", "refresh interval")),
		Slower:          key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "slower refresh")),
		Copy:            key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "copy ID")),
		Drill:           key.NewBinding(key.WithKeys("enter", "d"), key.WithHelp("enter/d", "details")),
		SearchNext:      key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "next match")),
		Raw:             key.NewBinding(key.WithKeys("v", "y"), key.WithHelp("v/y", "raw JSON")),
		RemoveOne:       key.NewBinding(key.WithKeys("ctrl+d"), key.WithHelp("ctrl+d", "rm item")),
		Journal:         key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "journal")),
		Command:         key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "go to")),
		Up:              key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:            key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:          key.NewBinding(key.WithKeys("pgup", "b", "ctrl+b"), key.WithHelp("pgup/b", "page up")),
		PageDown:        key.NewBinding(key.WithKeys("pgdown", "space", "ctrl+f"), key.WithHelp("pgdn/space", "page down")),
		Top:             key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g/home", "top")),
		Bottom:          key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G/end", "bottom")),
		Toggle:          key.NewBinding(key.WithKeys("enter", "right", "left", "l", "h"), key.WithHelp("enter/←/→", "collapse/expand")),
		Expand:          key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "expand")),
		Collapse:        key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "collapse")),
		ExpandAll:       key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "expand all")),
		CollapseAll:     key.NewBinding(key.WithKeys("E"), key.WithHelp("E", "collapse all")),
		FilterDone:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep filter")),
		FilterBackspace: key.NewBinding(key.WithKeys("backspace"), key.WithHelp("backspace", "delete")),
		FilterErase:     key.NewBinding(key.WithKeys("ctrl+u"), key.WithHelp("ctrl+u", "erase filter")),
		Confirm:         key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes, apply")),
		Cancel:          key.NewBinding(key.WithKeys("esc", "n", "enter", "q"), key.WithHelp("esc/enter", "cancel")),
		QuitAnyway:      key.NewBinding(key.WithKeys("y", "q", "ctrl+c"), key.WithHelp("y", "quit anyway")),
		Stay:            key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "stay")),
	}
	for i := range MaxPanes {
		n := fmt.Sprint(i + 1)
		k.Panes = append(k.Panes, key.NewBinding(key.WithKeys(n), key.WithHelp("1-9", "pane")))
	}
	if readOnly {
		k.ForceImages.SetEnabled(false)
		k.ForceContainers.SetEnabled(false)
		k.ReclaimAll.SetEnabled(false)
		k.Confirm.SetEnabled(false)
		k.StopPass.SetEnabled(false)
		k.RemoveOne.SetEnabled(false)
		k.Pause.SetEnabled(false) // a read-only dashboard runs no passes to pause
	} else {
		k.ReadOnly.SetEnabled(false)
	}
	return k
}

// Navigation returns the table navigation bindings, for a pane's help.
func (k KeyMap) Navigation() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}
}

// Table returns the bindings every table pane has besides navigation.
func (k KeyMap) Table() []key.Binding {
	return []key.Binding{k.Filter, k.ClearFilter, k.Sort, k.Reverse, k.Copy}
}
